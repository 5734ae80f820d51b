//! Kubernetes objects (Node, Pod, Namespace, ResourceQuota, Event, Kueue ClusterQueue,
//! LocalQueue, Workload, pending workloads) decoded as the watches decode them, stored and
//! mapped into the model (`gpuplane::fuzzing::kube`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gpuplane::fuzzing::kube::check(data));
