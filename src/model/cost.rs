use std::collections::BTreeMap;

/// Price per GPU-hour by GPU model. The key is matched as a case-insensitive substring of the
/// model name (`H100` matches `NVIDIA H100 80GB HBM3`); the longest match wins.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PriceCard {
    pub currency: String,
    pub per_gpu_hour: BTreeMap<String, f64>,
    /// Price for models that match no key.
    pub default: f64,
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
        Self { currency: "USD".into(), per_gpu_hour, default: 2.00 }
    }
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
}

/// Cost of `gpu_seconds` on a GPU model.
pub fn gpu_hours_cost(card: &PriceCard, model: &str, gpu_seconds: f64) -> f64 {
    card.price(model) * gpu_seconds / 3600.0
}
