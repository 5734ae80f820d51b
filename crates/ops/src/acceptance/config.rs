//! `[acceptance]`: what runs, where its output lands, and how results are judged.
//!
//! ```toml
//! [acceptance]
//! command = "all_reduce_perf -b 8 -e 8G -f 2 -g {gpus}"
//! image = "nvcr.io/nvidia/pytorch:24.05-py3"     # recorded; the Kubernetes launcher runs it
//! time_limit_min = 15
//! output = "{cwd}/gpuplane-acceptance-{job}.out"  # where the job writes (cluster path)
//! read_output = "/shared{cwd}/gpuplane-acceptance-{job}.out"  # where the console reads it
//! degraded_pct = 90
//! fail_pct = 70
//! drop_pct = 10
//! [acceptance.env]
//! NCCL_DEBUG = "WARN"
//! [acceptance.baseline]
//! "8xH100" = 360.0
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub const DEFAULT_COMMAND: &str = "all_reduce_perf -b 8 -e 8G -f 2 -g {gpus}";
pub const DEFAULT_OUTPUT: &str = "{cwd}/gpuplane-acceptance-{job}.out";

/// The section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AcceptanceSection {
    pub command: Option<String>,
    pub image: Option<String>,
    pub env: BTreeMap<String, String>,
    pub time_limit_min: Option<u32>,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub cwd: Option<String>,
    pub output: Option<String>,
    pub read_output: Option<String>,
    /// `srun` options before the command (e.g. `--mpi=pmix`).
    pub srun_args: Option<String>,
    /// GPUs per node when the scheduler does not say (default: the node's GPU count).
    pub gpus_per_node: Option<u32>,
    pub store: Option<PathBuf>,
    pub degraded_pct: Option<f64>,
    pub fail_pct: Option<f64>,
    pub drop_pct: Option<f64>,
    pub baseline: BTreeMap<String, f64>,
}

/// What runs, as resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// With `{gpus}` (GPUs per node) and `{nodes}` (node count) filled in per job.
    pub command: String,
    pub image: Option<String>,
    pub env: Vec<(String, String)>,
    pub time_limit_min: u32,
    pub partition: Option<String>,
    pub account: Option<String>,
    /// Working directory of the job on the cluster.
    pub cwd: String,
    /// Output path on the cluster: `{cwd}`, `{job}` (the scheduler's job id), `{name}`.
    pub output: String,
    /// The same file as the console sees it (default: `output`).
    pub read_output: String,
    pub srun_args: String,
    pub gpus_per_node: Option<u32>,
}

impl Default for Template {
    fn default() -> Self {
        Template {
            command: DEFAULT_COMMAND.into(),
            image: None,
            env: vec![("NCCL_DEBUG".into(), "WARN".into())],
            time_limit_min: 15,
            partition: None,
            account: None,
            cwd: "/tmp".into(),
            output: DEFAULT_OUTPUT.into(),
            read_output: DEFAULT_OUTPUT.into(),
            srun_args: String::new(),
            gpus_per_node: None,
        }
    }
}

/// Fills `{key}` placeholders; unknown ones are left as written.
pub fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

impl Template {
    pub fn command_for(&self, gpus: u32, nodes: usize) -> String {
        fill(&self.command, &[("gpus", &gpus.to_string()), ("nodes", &nodes.to_string())])
    }

    pub fn output_for(&self, job: &str, name: &str) -> String {
        fill(&self.output, &[("cwd", &self.cwd), ("job", job), ("name", name)])
    }

    pub fn read_output_for(&self, job: &str, name: &str) -> String {
        fill(&self.read_output, &[("cwd", &self.cwd), ("job", job), ("name", name)])
    }
}

/// How runs are judged.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeConfig {
    /// Expected busbw (GB/s) at the largest size, per shape (`8xH100`, `2x8xH100`).
    pub baseline: BTreeMap<String, f64>,
    /// Below this percent of the baseline: degraded.
    pub degraded_pct: f64,
    /// Below this percent: fail.
    pub fail_pct: f64,
    /// A node whose latest busbw is more than this percent below its own median has drifted.
    pub drop_pct: f64,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig { baseline: BTreeMap::new(), degraded_pct: 90.0, fail_pct: 70.0, drop_pct: 10.0 }
    }
}

/// The resolved `[acceptance]` section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AcceptanceConfig {
    pub template: Template,
    pub judge: JudgeConfig,
    /// The run store (default: `$XDG_DATA_HOME/gpuplane/acceptance.jsonl`).
    pub store: Option<PathBuf>,
}

impl AcceptanceConfig {
    pub fn resolve(s: &AcceptanceSection, warnings: &mut Vec<String>) -> AcceptanceConfig {
        let d = Template::default();
        let dj = JudgeConfig::default();
        let pct = |v: Option<f64>, name: &str, def: f64, warnings: &mut Vec<String>| match v {
            Some(p) if p.is_finite() && (0.0..=100.0).contains(&p) => p,
            Some(p) => {
                warnings.push(format!("config: acceptance.{name} = {p}: must be 0-100; using {def}"));
                def
            }
            None => def,
        };
        let degraded_pct = pct(s.degraded_pct, "degraded_pct", dj.degraded_pct, warnings);
        let mut fail_pct = pct(s.fail_pct, "fail_pct", dj.fail_pct, warnings);
        if fail_pct > degraded_pct {
            warnings.push(format!(
                "config: acceptance.fail_pct ({fail_pct}) above degraded_pct ({degraded_pct}); using {degraded_pct}"
            ));
            fail_pct = degraded_pct;
        }
        let mut baseline = BTreeMap::new();
        for (k, v) in &s.baseline {
            if v.is_finite() && *v > 0.0 {
                baseline.insert(k.clone(), *v);
            } else {
                warnings.push(format!("config: acceptance.baseline.{k:?} = {v}: must be a positive GB/s"));
            }
        }
        let mut env: Vec<(String, String)> = s.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if env.is_empty() {
            env = d.env.clone();
        }
        env.retain(|(k, _)| {
            let ok = !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !ok {
                warnings.push(format!("config: acceptance.env: {k:?} is not a variable name; ignored"));
            }
            ok
        });
        let output = s.output.clone().unwrap_or(d.output);
        AcceptanceConfig {
            template: Template {
                command: s.command.clone().filter(|c| !c.trim().is_empty()).unwrap_or(d.command),
                image: s.image.clone(),
                env,
                time_limit_min: s.time_limit_min.unwrap_or(d.time_limit_min).clamp(1, 24 * 60),
                partition: s.partition.clone(),
                account: s.account.clone(),
                cwd: s.cwd.clone().unwrap_or(d.cwd),
                read_output: s.read_output.clone().unwrap_or_else(|| output.clone()),
                output,
                srun_args: s.srun_args.clone().unwrap_or_default(),
                gpus_per_node: s.gpus_per_node.filter(|g| *g > 0),
            },
            judge: JudgeConfig {
                baseline,
                degraded_pct,
                fail_pct,
                drop_pct: pct(s.drop_pct, "drop_pct", dj.drop_pct, warnings),
            },
            store: s.store.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_templates() {
        let c = AcceptanceConfig::resolve(&AcceptanceSection::default(), &mut Vec::new());
        assert_eq!(c.template.command_for(8, 2), "all_reduce_perf -b 8 -e 8G -f 2 -g 8");
        assert_eq!(c.template.output_for("4242", "x"), "/tmp/gpuplane-acceptance-4242.out");
        assert_eq!(c.template.read_output_for("4242", "x"), "/tmp/gpuplane-acceptance-4242.out");
        assert_eq!((c.judge.degraded_pct, c.judge.fail_pct, c.judge.drop_pct), (90.0, 70.0, 10.0));
    }

    #[test]
    fn bad_values_warn_and_fall_back() {
        let s: AcceptanceSection = toml::from_str(
            "fail_pct = 95.0\ndegraded_pct = 150.0\n[env]\n\"BAD NAME\" = \"x\"\nNCCL_IB_HCA = \"mlx5\"\n[baseline]\n\"8xH100\" = 360.0\n\"8xA100\" = -1.0\n",
        )
        .unwrap();
        let mut w = Vec::new();
        let c = AcceptanceConfig::resolve(&s, &mut w);
        assert_eq!(c.judge.degraded_pct, 90.0);
        assert_eq!(c.judge.fail_pct, 90.0);
        assert_eq!(c.judge.baseline.len(), 1);
        assert_eq!(c.template.env, vec![("NCCL_IB_HCA".to_string(), "mlx5".to_string())]);
        assert_eq!(w.len(), 4, "{w:?}");
    }
}
