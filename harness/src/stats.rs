//! Statistics for the benchmark commands, which run under TCG on a shared host: figures move a lot
//! from one run to the next, so each round measures both drivers back to back and the figure kept
//! is the median of the per-round ratios, with a 95% confidence interval for it (distribution-free:
//! order statistics, as the ratios are neither normal nor few enough to guess their law).

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

/// A confidence interval of at least 95% for the median of what `values` sample: the `k`-th
/// smallest and the `k`-th largest value, with `k` the largest for which the binomial law with
/// p = 1/2 leaves at most 2.5% below `k` on either side. `None` for fewer than 6 values, where no
/// such `k` exists.
pub fn median_interval(values: &[f64]) -> Option<(f64, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    // P(X <= j) for X ~ Binomial(n, 1/2), summed term by term.
    let mut term = 0.5f64.powi(i32::try_from(n).ok()?);
    let mut below = 0.0;
    let mut k = 0;
    for j in 0..n {
        below += term;
        if 2.0 * below > 0.05 {
            break;
        }
        // P(X <= j) <= 2.5%: the (j + 1)-th values from either end bound the interval.
        k = j + 1;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    (k > 0).then(|| (sorted[k - 1], sorted[n - k]))
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

    /// One table line: medians of both, median ratio, the range of the ratios and the median
    /// ratio's 95% confidence interval.
    pub fn line(&self, label: &str) -> String {
        let ratios = self.ratios();
        let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let interval = match median_interval(&ratios) {
            Some((low, high)) => format!("{low:.2}-{high:.2}"),
            None => "-".to_string(),
        };
        format!(
            "{label:<36} {:>10.1} {:>10.1} {:>7.2}  {:<11}  {interval}",
            median(&self.c),
            median(&self.rs),
            median(&ratios),
            format!("{low:.2}-{high:.2}"),
        )
    }

    /// The table's header, naming the two drivers.
    pub fn header(c: &str, rs: &str) -> String {
        format!(
            "{:<36} {c:>10} {rs:>10} {:>7}  {:<11}  {}",
            "figure (medians over rounds)", "rs / C", "ratio range", "95% CI (rs / C)"
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
    fn median_interval_uses_binomial_order_statistics() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        // n = 10: P(X <= 1) = 11/1024 <= 2.5% < P(X <= 2) = 56/1024, so k = 2.
        assert_eq!(median_interval(&values), Some((2.0, 9.0)));
        let values: Vec<f64> = (1..=12).rev().map(f64::from).collect();
        // n = 12: P(X <= 2) = 79/4096 <= 2.5% < P(X <= 3) = 299/4096, so k = 3.
        assert_eq!(median_interval(&values), Some((3.0, 10.0)));
        // n = 6: P(X <= 0) = 1/64 <= 2.5%: the whole range.
        assert_eq!(
            median_interval(&[6.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
            Some((1.0, 6.0))
        );
        // n = 5: P(X <= 0) = 1/32 > 2.5%: no 95% interval.
        assert_eq!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0]), None);
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
