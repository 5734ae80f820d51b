use std::collections::BTreeMap;

/// Price per GPU-hour by GPU model. The key is matched as a case-insensitive substring of the
/// model name (`H100` matches `NVIDIA H100 80GB HBM3`); the longest match wins.
///
/// Besides the on-demand rates: reserved commitments (a fixed monthly cost for a number of
/// GPUs of a model, paid whether used or not), the share of a GPU that a MIG or time-sliced
/// model name stands for, overhead lines (network, storage, support, operations) per month,
/// the unit cost's denominator, the mapping of accounts to teams, and team budgets. A month
/// is [`MONTH_S`] (365/12 days) everywhere.
#[derive(
    Debug,
    Clone,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct PriceCard {
    pub currency: String,
    pub per_gpu_hour: BTreeMap<String, f64>,
    /// Price for models that match no key.
    pub default: f64,
    /// `[[prices.reserved]]`: committed GPUs, paid monthly.
    #[serde(default)]
    pub reserved: Vec<Reservation>,
    /// `[prices.share]`: the part of a whole GPU that a model name matching the key stands
    /// for (`"1g.10gb" = 0.142857`, `"shared" = 0.25`): its GPU-hours count at that share.
    #[serde(default)]
    pub share: BTreeMap<String, f64>,
    /// `[prices.overhead]`: fixed monthly lines (`network = 12000`, `storage = 8000`, ...).
    #[serde(default)]
    pub overhead: BTreeMap<String, f64>,
    /// The effective unit cost's denominator.
    #[serde(default)]
    pub unit: Unit,
    /// `[prices.teams]`: account → team (an account not listed is its own team).
    #[serde(default)]
    pub teams: BTreeMap<String, String>,
    /// `[prices.budgets]`: team → money per month.
    #[serde(default)]
    pub budgets: BTreeMap<String, f64>,
    /// `[prices.denominator]`: the unit cost's units from a PromQL counter instead of `unit`.
    #[serde(default)]
    pub denominator: Option<Denominator>,
}

/// `[prices.denominator]`: a PromQL expression whose value over the window is the number of
/// units (`promql = "sum(increase(accepted_tokens_total[$window]))"`, `name = "accepted
/// token"`). `$window` becomes the window's length (`2592000s`); the query is evaluated at the
/// window's end and must return one number.
#[derive(
    Debug,
    Clone,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
pub struct Denominator {
    pub promql: String,
    /// What one unit is called (default: the expression).
    #[serde(default)]
    pub name: Option<String>,
}

impl Denominator {
    /// The expression for a window of `window_s` seconds.
    pub fn expression(&self, window_s: i64) -> String {
        self.promql.replace("$window", &format!("{}s", window_s.max(1)))
    }

    pub fn label(&self) -> &str {
        self.name.as_deref().filter(|n| !n.trim().is_empty()).unwrap_or(&self.promql)
    }
}

/// Seconds in the month that monthly commitments and overhead lines are spread over.
pub const MONTH_S: i64 = 365 * 86_400 / 12;

/// A reserved commitment: `gpus` GPUs of `model` (a key matched like `per_gpu_hour`'s) for
/// `monthly` money a month. GPU-hours of that model up to the committed ones are paid by it;
/// beyond them, at the on-demand rate.
#[derive(
    Debug,
    Clone,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(deny_unknown_fields)]
pub struct Reservation {
    pub model: String,
    pub gpus: u32,
    pub monthly: f64,
}

/// What one unit of work is, for the effective unit cost (total / units).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    borsh::BorshSerialize,
    borsh::BorshDeserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    /// Jobs that completed (state COMPLETED) inside the window.
    #[default]
    CompletedRuns,
    /// Jobs that ended inside the window, whatever their outcome.
    FinishedJobs,
    /// GPU-hours that jobs held.
    GpuHours,
}

impl Unit {
    pub fn label(self) -> &'static str {
        match self {
            Unit::CompletedRuns => "completed run",
            Unit::FinishedJobs => "finished job",
            Unit::GpuHours => "GPU-hour",
        }
    }
}

impl Default for PriceCard {
    fn default() -> Self {
        let per_gpu_hour = [
            ("H200", 3.80),
            ("H100", 2.99),
            ("A100", 1.79),
            ("L40S", 1.10),
            ("L4", 0.55),
            ("B200", 5.50),
            ("GB200", 6.20),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Self {
            currency: "USD".into(),
            per_gpu_hour,
            default: 2.00,
            reserved: Vec::new(),
            share: BTreeMap::new(),
            overhead: BTreeMap::new(),
            unit: Unit::default(),
            teams: BTreeMap::new(),
            budgets: BTreeMap::new(),
            denominator: None,
        }
    }
}

/// The longest key of `map` that is a case-insensitive substring of `model`.
fn longest_match<'a, V>(map: impl Iterator<Item = (&'a String, V)>, model: &str) -> Option<V> {
    let model = model.to_ascii_lowercase();
    map.filter(|(k, _)| !k.is_empty() && model.contains(&k.to_ascii_lowercase()))
        .max_by_key(|(k, _)| k.len())
        .map(|(_, v)| v)
}

impl PriceCard {
    pub fn price(&self, model: &str) -> f64 {
        let model = model.to_ascii_lowercase();
        self.per_gpu_hour
            .iter()
            .filter(|(k, _)| model.contains(&k.to_ascii_lowercase()))
            .max_by_key(|(k, _)| k.len())
            .map(|(_, v)| *v)
            .unwrap_or(self.default)
    }

    /// The part of a whole GPU a model name stands for (a MIG profile, a time-sliced share);
    /// 1 when no `[prices.share]` key matches.
    pub fn share(&self, model: &str) -> f64 {
        longest_match(self.share.iter(), model).copied().unwrap_or(1.0)
    }

    /// The reserved commitments that cover a model (the longest matching key's).
    pub fn reservation(&self, model: &str) -> Option<&Reservation> {
        let model_l = model.to_ascii_lowercase();
        self.reserved
            .iter()
            .filter(|r| !r.model.is_empty() && model_l.contains(&r.model.to_ascii_lowercase()))
            .max_by_key(|r| r.model.len())
    }

    /// The team an account is charged to.
    pub fn team_of<'a>(&'a self, account: &'a str) -> &'a str {
        self.teams.get(account).map(String::as_str).unwrap_or(account)
    }
}

/// Cost of `gpu_seconds` on a GPU model.
pub fn gpu_hours_cost(card: &PriceCard, model: &str, gpu_seconds: f64) -> f64 {
    card.price(model) * gpu_seconds / 3600.0
}
