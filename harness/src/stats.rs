//! Statistics for the benchmark commands, which run under TCG on a shared host: figures move a lot
//! from one run to the next, so each round measures both drivers back to back and the figure kept
//! is the median of the per-round ratios.

/// The median (NaN for no values).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A figure measured on both drivers, round by round.
#[derive(Debug, Clone, Default)]
pub struct Paired {
    /// The C driver's value in each round.
    pub c: Vec<f64>,
    /// The Rust driver's value in the same rounds.
    pub rs: Vec<f64>,
}

impl Paired {
    /// Rust over C in each round where both were measured.
    pub fn ratios(&self) -> Vec<f64> {
        self.c.iter().zip(&self.rs).map(|(c, rs)| rs / c).collect()
    }

    /// One table line: medians of both, median ratio and the range of the ratios.
    pub fn line(&self, label: &str) -> String {
        let ratios = self.ratios();
        let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!(
            "{label:<36} {:>10.1} {:>10.1} {:>7.2}  {low:.2}-{high:.2}",
            median(&self.c),
            median(&self.rs),
            median(&ratios)
        )
    }

    /// The table's header, naming the two drivers.
    pub fn header(c: &str, rs: &str) -> String {
        format!(
            "{:<36} {c:>10} {rs:>10} {:>7}  {}",
            "figure (medians over rounds)", "rs / C", "ratio range"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn ratios_are_paired_by_round() {
        let p = Paired {
            c: vec![10.0, 20.0, 40.0],
            rs: vec![5.0, 20.0, 80.0],
        };
        assert_eq!(p.ratios(), vec![0.5, 1.0, 2.0]);
        assert_eq!(median(&p.ratios()), 1.0);
    }
}
