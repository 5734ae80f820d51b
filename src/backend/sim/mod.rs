//! The built-in simulated GPU cluster.
