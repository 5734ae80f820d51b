//! `slurm_responses`: slurmrestd answers of every API version through the parse functions the
//! Slurm backend uses (`backend::slurm::parse`, `perm::parse_user`, `Client::error_of`), then
//! through the steps the poller runs on what they give (`assign_gpus`, `queue_gpus`,
//! `merge_jobs`, `quotas`).
//!
//! Input: the first byte picks the API version (v0.0.38, v0.0.40, v0.0.41, v0.0.42, v0.0.43);
//! the rest is one or more sections separated by a NUL byte (never in a JSON body), each a
//! letter naming the endpoint and the body:
//!
//! | letter | endpoint | parsed by |
//! |---|---|---|
//! | `n` | `slurm/V/nodes` | `parse::nodes` |
//! | `p` | `slurm/V/partitions` | `parse::partitions` |
//! | `j` | `slurm/V/jobs` | `parse::jobs_streamed`, in chunks of 4 KiB |
//! | `s` | `slurm/V/jobs/state` | `parse::job_states` |
//! | `a` | `slurmdb/V/associations` | `parse::associations` |
//! | `q` | `slurmdb/V/qos` | `parse::qos` |
//! | `d` | `slurmdb/V/jobs` | `parse::db_jobs` |
//! | `u` | `slurmdb/V/user/root` | `perm::parse_user` |
//! | `e` | an answer that is not a success: next byte the status, then the body | `Client::error_of` |

use super::terminal_safe;
use crate::backend::slurm::client::Answer;
use crate::backend::slurm::{self, ApiVersion, Client, ClientConfig, SlurmError, TokenSource, parse};
use crate::model::{Job, JobId, Node, Queue};
use std::collections::HashSet;
use std::sync::LazyLock;

/// The token the client holds: no error text may contain it.
const SECRET: &str = "fuzz-secret-token-0b7e";

const VERSIONS: [ApiVersion; 5] =
    [ApiVersion::V0038, ApiVersion::V0040, ApiVersion::V0041, ApiVersion::V0042, ApiVersion::V0043];

const STATUSES: [u16; 8] = [400, 401, 403, 404, 500, 502, 503, 200];

static CLIENT: LazyLock<Client> = LazyLock::new(|| {
    // As `main` does before any client is built.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cfg = ClientConfig {
        url: "http://127.0.0.1:9".into(),
        user: Some("root".into()),
        token: TokenSource::Static(SECRET.into()),
        ca_file: None,
        timeout: std::time::Duration::from_secs(1),
        version: None,
    };
    Client::new(&cfg).expect("a client with a fixed URL")
});

/// An error from a parse: it names the endpoint, is terminal-safe and never holds the token.
fn error_ok(e: &SlurmError, endpoint: &str) {
    let msg = e.to_string();
    assert!(terminal_safe(&msg), "unsafe error text {msg:?}");
    assert!(!msg.contains(SECRET), "the token in an error: {msg:?}");
    if !matches!(e, SlurmError::Auth { .. }) {
        assert!(msg.contains(endpoint), "{msg:?} does not name {endpoint}");
    }
}

/// What the backend promises of a node from any answer.
fn node_ok(n: &Node) {
    assert!(n.gpus.len() as u32 == n.gpu_slots.min(64), "{} GPUs for {} slots", n.gpus.len(), n.gpu_slots);
    assert!(n.gpu_alloc <= n.gpu_slots, "{} of {} GPUs allocated", n.gpu_alloc, n.gpu_slots);
    for (i, g) in n.gpus.iter().enumerate() {
        assert_eq!(usize::from(g.index), i, "GPU indexes are 0..n");
    }
}

pub fn check(data: &[u8]) {
    let Some((&v, rest)) = data.split_first() else { return };
    let v = VERSIONS[usize::from(v) % VERSIONS.len()];
    let (mut nodes, mut queues, mut jobs, mut qos, mut limits, mut history) =
        (Vec::<Node>::new(), Vec::<Queue>::new(), Vec::<Job>::new(), Vec::new(), Vec::new(), Vec::new());
    let mut allocs = Vec::new();
    for section in rest.split(|&b| b == 0) {
        let Some((&what, body)) = section.split_first() else { continue };
        match what {
            b'n' => match parse::nodes(v, body) {
                Ok(p) => {
                    p.data.iter().for_each(node_ok);
                    nodes.extend(p.data);
                }
                Err(e) => error_ok(&e, &v.ctld("nodes")),
            },
            b'p' => match parse::partitions(v, body) {
                Ok(p) => queues.extend(p.data),
                Err(e) => error_ok(&e, &v.ctld("partitions")),
            },
            b'j' => match parse::jobs_streamed(v, body.chunks(4096)) {
                Ok(p) => {
                    let out = p.data;
                    assert_eq!(out.qos.len(), out.jobs.len(), "one QOS per job");
                    let ids: HashSet<JobId> = out.jobs.iter().map(|j| j.id).collect();
                    assert!(out.allocs.iter().all(|a| ids.contains(&a.job)), "an allocation of no job");
                    jobs.extend(out.jobs);
                    qos.extend(out.qos);
                    allocs.extend(out.allocs);
                }
                Err(e) => error_ok(&e, &v.ctld("jobs")),
            },
            b's' => {
                if let Err(e) = parse::job_states(v, body) {
                    error_ok(&e, &v.ctld("jobs/state"));
                }
            }
            b'a' => match parse::associations(v, body) {
                Ok(l) => limits.extend(l),
                Err(e) => error_ok(&e, &v.db("associations")),
            },
            b'q' => match parse::qos(v, body) {
                Ok(l) => limits.extend(l),
                Err(e) => error_ok(&e, &v.db("qos")),
            },
            b'd' => match parse::db_jobs(v, body) {
                Ok(h) => history.extend(h),
                Err(e) => error_ok(&e, &v.db("jobs")),
            },
            b'u' => {
                if let Ok(Some((_, coords))) = slurm::perm::parse_user(body, "root") {
                    assert!(coords.iter().all(|c| !c.is_empty()));
                }
            }
            b'e' => {
                let Some((&s, body)) = body.split_first() else { continue };
                let mut client = CLIENT.clone();
                client.version = Some(v);
                let status = STATUSES[usize::from(s) % STATUSES.len()];
                let a = Answer { status, body: bytes::Bytes::copy_from_slice(body) };
                let endpoint = v.ctld("nodes");
                let e = client.error_of(&endpoint, &a);
                error_ok(&e, &endpoint);
            }
            _ => {}
        }
    }
    // What the poller does with the parsed answers.
    slurm::assign_gpus(&mut nodes, &allocs);
    let ids: HashSet<JobId> = jobs.iter().map(|j| j.id).collect();
    for g in nodes.iter().flat_map(|n| &n.gpus) {
        assert!(g.job.is_none_or(|j| ids.contains(&j)), "a GPU held by no job");
    }
    slurm::queue_gpus(&mut queues, &nodes);
    let quotas = slurm::quotas(&limits, &jobs, &qos);
    assert!(quotas.len() >= limits.iter().filter(|l| l.scope != slurm::LimitScope::QosPerUser).count());
    let live = jobs.len();
    let merged = slurm::merge_jobs(jobs, &history, &nodes);
    assert!(merged.len() >= live && merged.len() <= live + history.len());
}
