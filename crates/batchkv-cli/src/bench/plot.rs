//! `--plot FILE.svg`: the `--engines` comparison as a grouped bar chart
//! (one group per benchmark, one bar per engine, median ops/sec on a log
//! scale so fills and scans fit one chart), drawn with plotters' SVG backend.

use std::path::Path;

use plotters::prelude::*;

use super::compare::{base_engine, Table};
use super::engine::BenchResult;

const COLORS: &[RGBColor] = &[
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
];

pub fn bar_chart(path: &Path, t: &Table, repeat: usize) -> BenchResult<()> {
    let values = t.ops_per_sec.iter().flatten().flatten().copied();
    let max = values.clone().fold(1.0f64, f64::max);
    let min = values.fold(max, f64::min).max(1.0);
    let (lo, hi) = (min / 2.0, max * 2.0);
    let n = t.benchmarks.len().max(1);
    let width = (160 * n as u32).max(640);
    let root = SVGBackend::new(path, (width, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let title = format!(
        "median ops/sec of {repeat} run(s), log scale (labels: {}/engine)",
        t.engines[base_engine(&t.engines)]
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..n as f64, (lo..hi).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("ops/sec")
        .y_label_formatter(&|v| human(*v))
        .draw()
        .map_err(err)?;

    let engines = t.engines.len().max(1);
    let bar = 0.8 / engines as f64;
    let base = base_engine(&t.engines);
    for (e, engine) in t.engines.iter().enumerate() {
        let color = COLORS[e % COLORS.len()];
        let bars = t
            .ops_per_sec
            .iter()
            .enumerate()
            .filter_map(move |(b, row)| {
                let v = row[e]?;
                let x0 = b as f64 + 0.1 + e as f64 * bar;
                Some(Rectangle::new(
                    [(x0, lo), (x0 + bar * 0.9, v)],
                    color.filled(),
                ))
            });
        chart
            .draw_series(bars)
            .map_err(err)?
            .label(engine.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
        // Ratio labels over the peers' bars.
        let ratios = t
            .ops_per_sec
            .iter()
            .enumerate()
            .filter_map(move |(b, row)| {
                let (a, v) = (row[base]?, row[e]?);
                if e == base || v <= 0.0 {
                    return None;
                }
                let x = b as f64 + 0.1 + e as f64 * bar;
                Some(
                    EmptyElement::at((x, v))
                        + Text::new(format!("{:.2}x", a / v), (0, -14), ("sans-serif", 11)),
                )
            });
        chart.draw_series(ratios).map_err(err)?;
    }
    let names = t.benchmarks.iter().enumerate().map(|(b, name)| {
        EmptyElement::at((b as f64 + 0.1, lo)) + Text::new(name.clone(), (0, 8), ("sans-serif", 13))
    });
    chart.draw_series(names).map_err(err)?;
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

fn err(e: impl std::fmt::Display) -> Box<dyn std::error::Error + Send + Sync> {
    format!("plot: {e}").into()
}

/// `1.2M`, `350k`, `42`.
fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_names_every_benchmark_and_engine() {
        let t = Table {
            benchmarks: vec!["fillrandom".into(), "readrandom".into()],
            engines: vec!["batchkv".into(), "rocksdb".into()],
            ops_per_sec: vec![
                vec![Some(900_000.0), Some(450_000.0)],
                vec![Some(2e6), None],
            ],
            ops_per_cpu_sec: vec![vec![None, None], vec![None, None]],
            write_amp: vec![vec![None, None], vec![None, None]],
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.svg");
        bar_chart(&path, &t, 2).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        for word in ["fillrandom", "readrandom", "batchkv", "rocksdb", "2.00x"] {
            assert!(svg.contains(word), "missing {word}");
        }
        assert_eq!(
            svg.matches("2.00x").count(),
            1,
            "one ratio: readrandom has no peer bar"
        );
    }

    #[test]
    fn human_units() {
        assert_eq!(human(1_500_000.0), "1.5M");
        assert_eq!(human(350_000.0), "350k");
        assert_eq!(human(42.0), "42");
    }
}
