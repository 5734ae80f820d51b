//! `gpuplane doctor`'s verdicts as data: one [`Check`] per thing checked, with its [`Status`],
//! what is wrong and the fix. The command line prints them; the console's `:doctor` shows the
//! same typed checks.

use crate::sanitize::sanitize;
use serde::Serialize;
use serde_json::Value;

/// A check's verdict. Ordered: the worst is the largest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Works as gpuplane needs it.
    Ok,
    /// Works, but something is disabled or degraded (a missing series, a denied action, skew).
    Warn,
    /// gpuplane cannot use this source (unreachable, refused credentials, nothing served).
    Fail,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }

    /// 0, 1 or 2.
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::Warn => 1,
            Status::Fail => 2,
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// `slurm`, `kube`, `prometheus`, `nvml`, `audit` or `config`.
    pub source: &'static str,
    /// The URL, context or path checked.
    pub target: String,
    /// What was checked (`dns`, `tcp`, `tls`, `token`, `auth`, `api`, `permission/drain`, …).
    pub check: String,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// Machine-readable facts behind the line (versions, expiry, missing series).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub data: Value,
}

impl Check {
    pub fn fix(&mut self, fix: impl AsRef<str>) -> &mut Self {
        self.fix = Some(sanitize(fix.as_ref()).into_owned());
        self
    }

    pub fn data(&mut self, data: Value) -> &mut Self {
        self.data = data;
        self
    }
}

impl Check {
    /// A check without data (the console's own line when the checks stopped, a test's).
    pub fn line(source: &'static str, target: &str, check: &str, status: Status, detail: &str) -> Check {
        Check {
            source,
            target: target.into(),
            check: check.into(),
            status,
            detail: detail.into(),
            fix: None,
            data: Value::Null,
        }
    }

    /// The source, the check and what was checked, as one phrase (`slurm tcp 10.0.0.5:6820`).
    pub fn what(&self) -> String {
        [self.source, self.check.as_str(), self.target.as_str()]
            .iter()
            .filter(|w| !w.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    }
}
