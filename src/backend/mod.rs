//! Backends own one protocol each and speak to the rest of gpuplane only through [`Update`](crate::model::protocol::Update)s
//! sent on a channel. No backend knows about widgets.

pub mod alertmanager;
pub mod bounds;
pub mod ids;
pub mod kube;
pub mod nvml;
pub mod prom;
pub mod retry;
pub mod sim;
pub mod slurm;

/// Hands freed heap pages back to the system, after a source freed much at once. glibc keeps
/// freed pages in its arenas: a Kubernetes rebuild frees as much as it allocates (at 1,000
/// events/s that alone grew RSS by ~50 MB), and the simulator drops its finished jobs' records
/// once they are handed out (31 MB that stayed resident).
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the kernel; it touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}
