//! What this identity may do on the cluster, asked before a write is planned (issue 6's
//! preflight), so a refusal is explained up front instead of coming back as a target's failure.
//!
//! Slurm's rules: uid 0 and the `SlurmUser` may do everything; otherwise slurmdbd's
//! `AdminLevel` decides — only `Administrator` may update nodes (slurmctld answers an
//! `Operator`'s node update with "Invalid user id", seen live on 24.11), `Operator` and
//! `Administrator` may cancel any job, `None` may cancel its own jobs and, as a coordinator, the
//! jobs of the accounts it coordinates. Without slurmdbd the level is unknown and the server
//! decides.

use super::client::{ApiVersion, Client};
use super::error::SlurmError;
use super::wire::{Loose, Words};
use serde::Deserialize;

/// slurmdbd's administrator level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminLevel {
    /// `None` or `Not Set`.
    None,
    Operator,
    Administrator,
}

impl AdminLevel {
    fn parse(words: &Words) -> AdminLevel {
        let has = |w: &str| words.0.iter().any(|x| x.eq_ignore_ascii_case(w));
        if has("Administrator") {
            AdminLevel::Administrator
        } else if has("Operator") {
            AdminLevel::Operator
        } else {
            AdminLevel::None
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            AdminLevel::None => "None",
            AdminLevel::Operator => "Operator",
            AdminLevel::Administrator => "Administrator",
        }
    }
}

/// The preflight's answer for one identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    /// The user the server acts as (`X-SLURM-USER-NAME`, or the token's `sun` claim); empty
    /// when neither names one.
    pub user: String,
    /// `None` when it could not be learnt (no slurmdbd behind this slurmrestd, or it failed).
    pub level: Option<AdminLevel>,
    /// Accounts this user coordinates.
    pub coordinates: Vec<String>,
    /// Where the answer came from, or why there is none (shown with refusals).
    pub source: String,
    /// The REST version the server was asked in: v0.0.38 has no node update, whoever asks.
    pub api: Option<ApiVersion>,
    /// The cluster's name as the server gives it (the ping's, or slurmdbd's `ClusterName`).
    pub cluster: Option<String>,
}

impl Permission {
    /// Whether this server can update nodes (drain, resume) over REST at all: v0.0.38
    /// (Slurm 22.05/23.02) cannot, whatever the identity's rights. Unknown (`None`): it may.
    pub fn node_updates(&self) -> bool {
        !self.api.is_some_and(ApiVersion::is_legacy)
    }

    fn privileged(&self) -> bool {
        matches!(self.level, Some(AdminLevel::Operator | AdminLevel::Administrator))
    }

    /// Drain and resume: an administrator's right (root, SlurmUser or AdminLevel
    /// Administrator).
    pub fn may_update_nodes(&self) -> Result<(), String> {
        match self.level {
            Some(l @ (AdminLevel::None | AdminLevel::Operator)) => Err(format!(
                "Slurm user {} has AdminLevel {} ({}): draining or resuming nodes needs Administrator \
                 (or root/SlurmUser) — an administrator can run `sacctmgr modify user {} set \
                 adminlevel=Administrator`, or start break-glass with the privileged token",
                self.user,
                l.label(),
                self.source,
                self.user
            )),
            _ => Ok(()),
        }
    }

    /// Cancelling one job of `owner` charged to `account`.
    pub fn may_cancel(&self, job: &str, owner: &str, account: &str) -> Result<(), String> {
        if self.level.is_none() || self.privileged() || owner == self.user {
            return Ok(());
        }
        if !account.is_empty() && self.coordinates.iter().any(|a| a == account) {
            return Ok(());
        }
        Err(format!(
            "job {job} belongs to {owner} (account {account}); Slurm user {} may cancel only its own jobs \
             (AdminLevel None, coordinator of {}; {})",
            self.user,
            if self.coordinates.is_empty() { "no account".to_string() } else { self.coordinates.join(", ") },
            self.source
        ))
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Users {
    users: Vec<User>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct User {
    name: Loose,
    administrator_level: Words,
    coordinators: Vec<Coord>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Coord {
    name: Loose,
}

/// The level and coordinated accounts of `user` from a `/slurmdb/<v>/user/<name>` answer
/// (dbv0.0.38: `"administrator_level": "Operator"`; v0.0.40+: `["Operator"]`). `None` when the
/// answer does not list the user.
pub fn parse_user(body: &[u8], user: &str) -> serde_json::Result<Option<(AdminLevel, Vec<String>)>> {
    let u: Users = serde_json::from_slice(body)?;
    Ok(u.users.into_iter().find(|u| u.name.as_str() == user).map(|u| {
        let coords = u.coordinators.into_iter().filter_map(|c| c.name.0).filter(|c| !c.is_empty()).collect();
        (AdminLevel::parse(&u.administrator_level), coords)
    }))
}

fn plain_name(u: &str) -> bool {
    !u.is_empty()
        && u.len() <= 64
        && u.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl Client {
    /// Who the server acts as, and what slurmdbd says that user may do. `slurm_user` is the
    /// cluster's `SlurmUser`, privileged like root. Transport and token failures are errors;
    /// a missing slurmdbd is an unknown level, not an error.
    pub async fn permission(&mut self, slurm_user: &str) -> Result<Permission, SlurmError> {
        let v = self.version().await?;
        let cluster = self.cluster.clone();
        let user = match self.identity().await {
            Some(u) => u,
            None => {
                return Ok(Permission {
                    user: String::new(),
                    level: None,
                    coordinates: Vec::new(),
                    source: "neither the configuration nor the token names the Slurm user".into(),
                    api: Some(v),
                    cluster: cluster.clone(),
                });
            }
        };
        let known = |level, source: &str| Permission {
            user: user.clone(),
            level: Some(level),
            coordinates: Vec::new(),
            source: source.to_string(),
            api: Some(v),
            cluster: cluster.clone(),
        };
        if user == "root" {
            return Ok(known(AdminLevel::Administrator, "uid 0"));
        }
        if user == slurm_user {
            return Ok(known(AdminLevel::Administrator, "the cluster's SlurmUser"));
        }
        let unknown = |why: String| Permission {
            user: user.clone(),
            level: None,
            coordinates: Vec::new(),
            source: why,
            api: Some(v),
            cluster: cluster.clone(),
        };
        if !plain_name(&user) {
            return Ok(unknown("the user name cannot be looked up in slurmdbd".into()));
        }
        let path = v.db(&format!("user/{user}"));
        let a = self.send(reqwest::Method::GET, &path, &[], None).await?;
        match a.status {
            200 => match parse_user(&a.body, &user) {
                Ok(Some((level, coordinates))) => Ok(Permission {
                    user: user.clone(),
                    level: Some(level),
                    coordinates,
                    source: "slurmdbd".into(),
                    api: Some(v),
                    cluster: cluster.clone(),
                }),
                // slurmdbd answered and does not know the user: it has no level.
                Ok(None) => Ok(known(AdminLevel::None, "not a user in slurmdbd")),
                Err(e) => Ok(unknown(format!("slurmdbd's answer for {user} was not understood: {e}"))),
            },
            404 => Ok(unknown("no slurmdbd behind this slurmrestd: the server decides".into())),
            _ => Ok(unknown(self.error_of(&path, &a).to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = r#"{"users":[{"administrator_level":"Operator","name":"alice",
        "coordinators":[{"name":"ml-research","direct":1}]}],"errors":[]}"#;
    const NEW: &str = r#"{"users":[{"administrator_level":["None"],"name":"bob","coordinators":[]}]}"#;

    fn perm(level: Option<AdminLevel>, coords: &[&str]) -> Permission {
        Permission {
            user: "bob".into(),
            level,
            coordinates: coords.iter().map(|c| c.to_string()).collect(),
            source: "slurmdbd".into(),
            api: None,
            cluster: None,
        }
    }

    #[test]
    fn both_shapes_of_the_user_record() {
        let (l, c) = parse_user(OLD.as_bytes(), "alice").unwrap().unwrap();
        assert_eq!((l, c), (AdminLevel::Operator, vec!["ml-research".to_string()]));
        let (l, c) = parse_user(NEW.as_bytes(), "bob").unwrap().unwrap();
        assert_eq!((l, c.len()), (AdminLevel::None, 0));
        assert_eq!(parse_user(NEW.as_bytes(), "carol").unwrap(), None);
        assert!(parse_user(b"<html>", "bob").is_err());
        let set = r#"{"users":[{"administrator_level":["Not Set"],"name":"x"}]}"#;
        assert_eq!(parse_user(set.as_bytes(), "x").unwrap().unwrap().0, AdminLevel::None);
    }

    #[test]
    fn node_updates_need_an_administrator() {
        let e = perm(Some(AdminLevel::None), &[]).may_update_nodes().unwrap_err();
        assert!(e.contains("AdminLevel None") && e.contains("sacctmgr modify user bob"), "{e}");
        let e = perm(Some(AdminLevel::Operator), &[]).may_update_nodes().unwrap_err();
        assert!(e.contains("AdminLevel Operator") && e.contains("adminlevel=Administrator"), "{e}");
        assert!(perm(Some(AdminLevel::Administrator), &[]).may_update_nodes().is_ok());
        assert!(perm(None, &[]).may_update_nodes().is_ok(), "unknown: the server decides");
    }

    #[test]
    fn cancelling_others_jobs_needs_a_level_or_a_coordinator() {
        let p = perm(Some(AdminLevel::None), &["inference"]);
        assert!(p.may_cancel("1", "bob", "ml-research").is_ok(), "own job");
        assert!(p.may_cancel("2", "alice", "inference").is_ok(), "coordinated account");
        let e = p.may_cancel("3", "alice", "ml-research").unwrap_err();
        assert!(e.contains("job 3 belongs to alice") && e.contains("coordinator of inference"), "{e}");
        assert!(perm(Some(AdminLevel::Administrator), &[]).may_cancel("3", "alice", "x").is_ok());
        assert!(perm(None, &[]).may_cancel("3", "alice", "x").is_ok());
    }
}
