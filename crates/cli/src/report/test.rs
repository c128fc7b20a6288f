//! Snapshot tests of every report format, on a fixed sweep (hyperfine's `export/tests.rs`).

use std::collections::BTreeMap;
use std::time::Duration;

use coretune_core::Policy;
use coretune_core::SweepReport;
use coretune_core::grid::{Config, Grid};
use coretune_core::measure::Noise;
use coretune_core::measure::{Measurement, MigrationSource, RssSource};
use coretune_core::sweep::{Design, RunLine, RunView, Status, Strategy, Target};
use coretune_core::topology::MachineRecord;
use coretune_core::workload::{RunRecord, Size, Throughput, Unit, WorkloadSpec};

use super::*;

fn line(seq: usize, threads: usize, place: &str, wall: f64, status: Status) -> RunLine {
    let record = RunRecord {
        measurement: Measurement {
            wall: Duration::from_secs_f64(wall),
            user: Some(Duration::from_secs_f64(wall * threads as f64 * 0.9)),
            sys: Some(Duration::from_millis(10)),
            voluntary_ctx_switches: Some(2),
            involuntary_ctx_switches: Some(10 * threads as u64),
            migrations: Some(threads as u64),
            migrations_source: MigrationSource::Perf,
            peak_rss_bytes: Some(32 << 20),
            peak_rss_source: RssSource::Run,
            threads: Vec::new(),
        },
        throughput: Throughput {
            value: 3.0 / wall,
            unit: Unit::MraysPerSec,
        },
        verified: status == Status::Ok,
        verify_error: (status != Status::Ok).then(|| "raymesh: ray 7 was never traced".into()),
        checksum: Some(0xfeed),
        throttle_trace: Vec::new(),
        pinning: None,
        audit: None,
        metrics: std::collections::BTreeMap::new(),
        sampler: None,
    };
    RunLine {
        seq,
        config: Config::new(threads, place.parse().unwrap()),
        warmup: false,
        status,
        stderr_tail: None,
        error: record.verify_error.clone(),
        record: Some(record),
        noise: Noise {
            loadavg: Some(0.5),
            steal: Some(0.0),
            others_cpus: Some(0.01),
            busy: false,
            throttled_periods: None,
            throttled_s: None,
        },
        ended_at: 1_795_298_295.0 + seq as f64,
    }
}

fn fixed_report() -> SweepReport {
    let mut lines = Vec::new();
    let times = [
        (1, "os", [2.00, 2.02, 1.98]),
        (2, "os", [1.02, 1.021, 1.019]),
        (2, "spread", [1.009, 1.01, 1.011]),
        (4, "os", [1.10, 1.12, 1.11]),
    ];
    for (threads, place, walls) in times {
        for w in walls {
            lines.push(line(lines.len(), threads, place, w, Status::Ok));
        }
    }
    lines.push(line(lines.len(), 4, "spread", 0.5, Status::Unverified));
    let machine = MachineRecord {
        hostname: "bench-host".into(),
        kernel: "6.1.0".into(),
        cpu_model: "Example CPU".into(),
        governor: None,
        settings: Default::default(),
        topology: "1 package, 1 NUMA node, 1 L3, 2 cores, 2 PUs, SMT 1".into(),
        tool_version: "0.1.0".into(),
        command: vec!["coretune".into(), "tune".into()],
        environment: BTreeMap::new(),
    };
    let plan = Design {
        grid: Grid::new(vec![1, 2, 4], vec![Policy::Os, Policy::Spread]),
        strategy: Strategy::Search,
        runs: 3,
        warmup: 0,
        min_time: Duration::ZERO,
        tolerance: 0.03,
        max_runs: 0,
        objectives: Vec::new(),
        ignore_failure: false,
        pus: Default::default(),
    };
    let target = Target::Workload {
        spec: WorkloadSpec {
            name: "raymesh".into(),
            size: Size::Default,
            rays: Some(250_000),
            ..WorkloadSpec::default()
        },
        description: "3 tables of 250000 rays".into(),
    };
    let mut report = SweepReport::build(target, machine, plan, &lines, &|_| {
        vec!["coretune bench raymesh --threads 2 --place os".into()]
    });
    report.created_at = 0.0;
    report.tool_version = "0.1.0".into();
    // It stands for a finished sweep (its runs of 1 thread, spread are left out to keep it
    // small); `incomplete_sweeps_say_so_in_every_format` has one that is not.
    report.complete = true;
    report.runs.planned = Some(report.runs.measured);
    report
}

fn render(r: &dyn Reporter) -> String {
    String::from_utf8(r.render(&fixed_report()).unwrap()).unwrap()
}

#[test]
fn csv_snapshot() {
    insta::assert_snapshot!(render(&csv::Csv));
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(render(&md::Markdown));
}

#[test]
fn json_snapshot_and_round_trip() {
    let text = render(&json::Json);
    insta::assert_snapshot!(text);
    let back: SweepReport = serde_json::from_str(&text).unwrap();
    assert_eq!(back, fixed_report());
}

#[test]
fn hyperfine_snapshot() {
    insta::assert_snapshot!(render(&hyperfine::Hyperfine));
}

#[test]
fn table_snapshot_plain_and_coloured() {
    let report = fixed_report();
    insta::assert_snapshot!(table::render(&report, false));
    let coloured = table::render(&report, true);
    assert!(coloured.contains("\u{1b}["), "colour codes when asked for");
    assert!(!table::render(&report, false).contains("\u{1b}["));
}

#[test]
fn recommendation_in_the_fixed_sweep() {
    let r = fixed_report().recommendation.unwrap();
    // 2 threads spread is 1% faster than 2 threads os: a tie, which goes to no pinning.
    assert_eq!(
        (r.config.threads, r.config.family.place.as_str()),
        (2, "os")
    );
    assert_eq!(
        (r.fastest.threads, r.fastest.family.place.as_str()),
        (2, "spread")
    );
    // 4 threads spread is out: its run did not verify, and the warning quotes why.
    assert!(
        r.warnings.iter().any(|w| w.starts_with(
            "1 configuration is out of the running after a failed run (the first: 4 threads, \
             place spread: 1 of 1 run failed: raymesh: ray 7 was never traced)"
        )),
        "{:?}",
        r.warnings
    );
    let report = fixed_report();
    assert!(report.complete);
    let row = report
        .configs
        .iter()
        .find(|c| c.config.threads == 4 && c.config.family.place.as_str() == "spread")
        .unwrap();
    assert_eq!(
        row.out.as_deref(),
        Some("1 of 1 run failed: raymesh: ray 7 was never traced")
    );
}

fn count(svg: &str, tag: &str) -> usize {
    svg.matches(&format!("<{tag}")).count()
}

/// The texts of an SVG's `<text>` elements, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..t.find("</text>")?];
            Some(body.trim().to_owned())
        })
        .collect()
}

#[test]
fn line_plots_have_one_series_per_family_and_labelled_axes() {
    let report = fixed_report();
    // Points: os at 1, 2, 4 threads and spread at 2 (its failed 4-thread run has no median).
    let time = svg::time_plot(&report).unwrap();
    assert!(time.starts_with("<svg width=\"800\""));
    // A marker per point, plus the centre dot of each interval whisker.
    assert_eq!(count(&time, "circle"), 4 * 2);
    let t = texts(&time);
    for label in ["threads", "wall time (s)", "os", "spread"] {
        assert!(t.iter().any(|x| x == label), "{label} missing in {t:?}");
    }
    let speedup = svg::speedup_plot(&report).unwrap();
    assert_eq!(count(&speedup, "circle"), 4);
    assert!(texts(&speedup).iter().any(|x| x == "ideal (linear)"));
    assert!(texts(&speedup).iter().any(|x| x == "speedup (×)"));
    let eff = svg::efficiency_plot(&report).unwrap();
    assert!(texts(&eff).iter().any(|x| x == "efficiency (%)"));
}

#[test]
fn heat_map_has_a_cell_per_configuration() {
    let svg = svg::heatmap_plot(&fixed_report()).unwrap();
    // Background + 5 configurations (the failed one is a cell saying so).
    assert_eq!(count(&svg, "rect"), 1 + 5);
    let t = texts(&svg);
    assert!(t.iter().any(|x| x == "failed"), "{t:?}");
    assert!(t.iter().any(|x| x.starts_with("1.020 s ×")), "{t:?}");
    for label in ["1", "2", "4", "os", "spread", "threads", "configuration"] {
        assert!(t.iter().any(|x| x == label), "{label} missing in {t:?}");
    }
}

/// A sweep of copies × threads × memory policies judged on throughput (`tune membw
/// --instances 1,2 --threads 1,2 --mem none,local`): 2 copies of 1 thread have the best
/// throughput, 1 copy of 2 threads the best time.
fn copies_report() -> SweepReport {
    let mut lines = Vec::new();
    for (instances, threads, mem, wall) in [
        (1, 1, "none", 2.0),
        (1, 2, "none", 1.0),
        (2, 1, "none", 1.25),
        (2, 2, "none", 1.3),
        (1, 1, "local", 2.05),
        (1, 2, "local", 1.05),
        (2, 1, "local", 1.35),
        (2, 2, "local", 1.4),
    ] {
        for k in 0..3 {
            let w = wall * (1.0 + 0.001 * f64::from(k));
            let mut l = line(lines.len(), threads, "os", w, Status::Ok);
            l.config.family.instances = instances;
            l.config.family.mem = mem.parse().unwrap();
            let record = l.record.as_mut().unwrap();
            record.throughput.value = instances as f64 * 3.0 / w;
            lines.push(l);
        }
    }
    let mut report = fixed_report();
    report.design.grid.instances = vec![1, 2];
    report.design.grid.places = vec![Policy::Os];
    report.design.grid.threads = vec![1, 2];
    report.design.grid.mems = vec!["none".parse().unwrap(), "local".parse().unwrap()];
    SweepReport::build(
        report.target.clone(),
        report.machine.clone(),
        report.design.clone(),
        &lines,
        &|_| Vec::new(),
    )
}

/// The x coordinates of each polyline of a plot's series (stroke width 2), legend samples
/// (two points) aside.
fn series_xs(svg: &str) -> Vec<Vec<i64>> {
    svg.split("stroke-width=\"2\" points=\"")
        .skip(1)
        .map(|rest| {
            rest[..rest.find('"').unwrap()]
                .split_whitespace()
                .map(|p| p.split(',').next().unwrap().parse::<f64>().unwrap() as i64)
                .collect::<Vec<i64>>()
        })
        .filter(|xs| xs.len() > 2 || xs.windows(2).all(|w| w[1] - w[0] != 20))
        .collect()
}

/// Findings 12 and 34 (#35): every configuration of copies and memory policies was drawn as one
/// "os" line with vertical segments joining them at each thread count, and the heat map had a
/// cell per thread count (the last-written row's), shaded by wall time though the sweep was
/// judged on throughput, the recommended configuration missing.
#[test]
fn the_plots_draw_every_axis_and_the_heat_map_shades_by_the_objective() {
    let report = copies_report();
    let r = report.recommendation.as_ref().unwrap();
    assert_eq!(
        (r.config.family.instances, r.config.threads),
        (2, 1),
        "{r:?}"
    );
    for plot in [
        svg::time_plot(&report).unwrap(),
        svg::objective_plot(&report).unwrap().unwrap(),
        svg::speedup_plot(&report).unwrap(),
    ] {
        let t = texts(&plot);
        for label in [
            "os",
            "os, 2 copies",
            "os, mem local",
            "os, 2 copies, mem local",
        ] {
            assert!(t.iter().any(|x| x == label), "{label} not in {t:?}");
        }
        // No series joins two points at one thread count.
        for xs in series_xs(&plot) {
            assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        }
    }
    let heat = svg::heatmap_plot(&report).unwrap();
    // The background and a cell per configuration: 4 families × 2 thread counts.
    assert_eq!(count(&heat, "rect"), 1 + 8);
    let t = texts(&heat);
    assert!(
        t.iter()
            .any(|x| x.starts_with("Median throughput (Mrays/s, higher is better)")),
        "{t:?}"
    );
    // The darkest cell is the best throughput, the recommended 2 copies × 1 thread (4.8).
    let darkest = "fill=\"#08306B\"";
    assert_eq!(heat.matches(darkest).count(), 1, "{heat}");
    let best = report
        .configs
        .iter()
        .find(|c| c.config == r.config)
        .and_then(|c| c.objective_median(0))
        .unwrap();
    assert!(
        t.iter()
            .any(|x| x.starts_with(&format!("{best:.2} Mrays/s"))),
        "{t:?}"
    );
}

/// Finding 12 (#35): the residency plot labelled the two copies' first workers "worker 0" and
/// "worker 0".
#[test]
fn the_residency_view_labels_each_copys_workers_with_their_copy() {
    use coretune_core::measure::ThreadRecord;
    let mut l = line(0, 2, "os", 1.0, Status::Ok);
    l.config.family.instances = 2;
    l.record.as_mut().unwrap().measurement.threads = [(0, 10), (1, 11), (0, 20), (1, 21)]
        .map(|(worker, tid)| ThreadRecord {
            worker,
            tid,
            cpus_seen: BTreeMap::from([(worker, 5)]),
            ..ThreadRecord::default()
        })
        .to_vec();
    let mut report = fixed_report();
    report.recommendation.as_mut().unwrap().config = l.config.clone();
    let view = RunView::choose(&report, &[l], &|_| None, &[]);
    let labels: Vec<&str> = view.threads.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(
        labels,
        [
            "copy 0 worker 0 (tid 10)",
            "copy 0 worker 1 (tid 11)",
            "copy 1 worker 0 (tid 20)",
            "copy 1 worker 1 (tid 21)"
        ]
    );
}

fn sample(t_s: f64, busy: [f64; 4], worker_cpu: usize) -> coretune_core::program::watch::Sample {
    use coretune_core::program::watch::{CpuBusy, Sample, ThreadSample};
    Sample {
        t_s,
        cpus: (0..4)
            .map(|cpu| CpuBusy {
                cpu,
                busy_pct: busy[cpu],
            })
            .collect(),
        threads: vec![ThreadSample {
            pid: 1,
            tid: 2,
            name: "worker".into(),
            cpu: worker_cpu,
            migrations: Some(0),
            started: None,
            cpu_time_s: None,
            tree: None,
        }],
        irqs: BTreeMap::new(),
        softirqs: BTreeMap::new(),
        policies: Default::default(),
        at_ns: None,
    }
}

#[test]
fn per_cpu_plots_group_by_topology_and_show_residency() {
    use coretune_core::program::watch::CpuPlace;
    let samples = vec![
        sample(0.1, [90.0, 5.0, 0.0, 50.0], 0),
        sample(0.2, [95.0, 5.0, 0.0, 50.0], 0),
        sample(0.3, [10.0, 90.0, 0.0, 50.0], 3),
    ];
    // CPUs 0 and 3 share core 0, 1 and 2 core 1 (an SMT numbering that is not in order).
    let places = [(0, 0), (1, 1), (2, 1), (3, 0)]
        .map(|(cpu, core)| CpuPlace {
            cpu,
            core: Some(core),
            l3: Some(0),
            numa: Some(0),
        })
        .to_vec();
    let summary = coretune_core::program::watch::summarize(&samples);
    let view = RunView {
        label: "test".into(),
        threads: summary
            .threads
            .iter()
            .map(|t| (t.name.clone(), t.cpus_seen.clone(), t.migrations))
            .collect(),
        samples,
        places,
        throttle_traces: Vec::new(),
    };
    let util = svg::utilisation_plot(&view).unwrap().unwrap();
    let t = texts(&util);
    let titles: Vec<&String> = t.iter().filter(|x| x.starts_with("CPU ")).collect();
    assert_eq!(
        titles,
        [
            "CPU 0 (NUMA 0, L3 0, core 0)",
            "CPU 3 (NUMA 0, L3 0, core 0)",
            "CPU 1 (NUMA 0, L3 0, core 1)",
            "CPU 2 (NUMA 0, L3 0, core 1)"
        ]
    );
    assert_eq!(t.iter().filter(|x| *x == "busy (%)").count(), 4);
    assert_eq!(t.iter().filter(|x| *x == "time (s)").count(), 4);
    let res = svg::residency_plot(&view).unwrap().unwrap();
    let t = texts(&res);
    assert!(t.iter().any(|x| x == "worker (0 migr.)"), "{t:?}");
    // One cell per CPU: 67% on CPU 0, 33% on CPU 3.
    assert_eq!(count(&res, "rect"), 1 + 4);
    assert!(t.iter().any(|x| x == "67%") && t.iter().any(|x| x == "33%"));
    // Nothing to draw without samples or threads.
    assert!(
        svg::utilisation_plot(&RunView::default())
            .unwrap()
            .is_none()
    );
    assert!(svg::residency_plot(&RunView::default()).unwrap().is_none());
}

#[test]
fn throttle_plot_draws_limit_and_throughput_per_run() {
    use coretune_core::sweep::ThrottleTrace;
    use coretune_core::workload::ThrottleSample;
    let trace = |run: usize, limits: &[usize]| ThrottleTrace {
        label: format!("run {run}: 8 threads, place os, throttle adaptive"),
        samples: limits
            .iter()
            .enumerate()
            .map(|(i, &limit)| ThrottleSample {
                t_s: 0.01 * (i + 1) as f64,
                limit,
                throughput: 1000.0 + 10.0 * limit as f64,
            })
            .collect(),
    };
    let view = RunView {
        throttle_traces: vec![trace(3, &[8, 8, 4, 4, 8, 8]), trace(7, &[8, 4, 8, 7, 8])],
        ..RunView::default()
    };
    let plot = svg::throttle_plot(&view).unwrap().unwrap();
    let t = texts(&plot);
    for label in [
        "Adaptive throttle: limit and throughput over time",
        "limit (workers at once)",
        "throughput (units/s)",
        "run 3: 8 threads, place os, throttle adaptive",
        "run 7: 8 threads, place os, throttle adaptive",
    ] {
        assert!(t.iter().any(|x| x == label), "{label} not in {t:?}");
    }
    assert_eq!(
        t.iter()
            .filter(|x| *x == "time since the run started (s)")
            .count(),
        2
    );
    // Two runs in two panels, plus the legend's two samples (the axes are 1 px wide).
    let lines = |svg: &str| svg.matches("stroke-width=\"2\" points=").count();
    assert_eq!(lines(&plot), 2 * 2 + 2);
    // The limit is drawn as steps: 6 samples give 2 × 5 + 1 points.
    let first = plot.split("stroke-width=\"2\" points=").nth(1).unwrap();
    let points = &first[1..first.find("\"/>").unwrap()];
    assert_eq!(points.split_whitespace().count(), 11, "{points}");
    // Only the first MAX_TRACES_SHOWN runs are drawn.
    let many = RunView {
        throttle_traces: (0..20).map(|i| trace(i, &[2, 1])).collect(),
        ..RunView::default()
    };
    let plot = svg::throttle_plot(&many).unwrap().unwrap();
    assert_eq!(lines(&plot), 3 * svg::MAX_TRACES_SHOWN);
    assert!(svg::throttle_plot(&RunView::default()).unwrap().is_none());
}

#[test]
fn html_snapshot_without_plots_and_self_contained_with_them() {
    let report = fixed_report();
    let page = html::render(&report, &[]);
    insta::assert_snapshot!(page);
    let fig = html::Figure {
        id: "plot-time",
        caption: "a <caption> & more".into(),
        svg: svg::time_plot(&report).unwrap(),
    };
    let page = html::render(&report, &[fig]);
    assert!(page.contains("<figure id=\"plot-time\">\n<svg width=\"800\""));
    assert!(page.contains("a &lt;caption&gt; &amp; more"));
    assert!(!page.contains("{{"), "every placeholder filled");
    // Self-contained: nothing fetched (the SVG namespace is a name, not a fetch).
    let without_ns = page.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for needle in ["http://", "https://", "<link", "src=", "@import", "url("] {
        assert!(!without_ns.contains(needle), "{needle} in the page");
    }
}

/// Under `tune --launcher` each row carries the launcher's line: the terminal, markdown and
/// HTML tables end with it; without a launcher they have no such column (the snapshots).
#[test]
fn a_launchers_line_is_the_tables_last_column() {
    let mut report = fixed_report();
    for c in &mut report.configs {
        c.launch = Some(format!(
            "mpirun -np 1 --map-by slot:PE={} --bind-to core",
            c.config.threads
        ));
    }
    let table = table::render(&report, false);
    let header = table.lines().next().unwrap();
    assert!(header.trim_end().ends_with("launch"), "{table}");
    // The row of 4 threads, os: 3 runs, then its line.
    assert!(
        table.lines().any(|l| l.trim_start().starts_with("4  os")
            && l.trim_end()
                .ends_with("  3  mpirun -np 1 --map-by slot:PE=4 --bind-to core")),
        "{table}"
    );
    let md = String::from_utf8(md::Markdown.render(&report).unwrap()).unwrap();
    assert!(md.contains("| Runs | Launch |"), "{md}");
    assert!(
        md.contains("| `mpirun -np 1 --map-by slot:PE=2 --bind-to core` |"),
        "{md}"
    );
    let html = table_html(&report);
    assert!(html.contains("<th class=\"l\">Launch</th>"), "{html}");
    // Finding 34 (#35): the line wraps between options only, never inside one.
    assert!(
        html.contains(
            "<code><span>mpirun</span> <span>-np 1</span> <span>--map-by slot:PE=1</span> \
             <span>--bind-to core</span></code>"
        ),
        "{html}"
    );
    let plain = fixed_report();
    assert!(!table::render(&plain, false).contains("launch"));
    assert!(!table_html(&plain).contains("Launch"));
}

fn table_html(report: &SweepReport) -> String {
    html::render(report, &[])
}

/// Finding 14: an interrupted sweep's outputs read as finished once redirected to a file. Each
/// now says it is incomplete, with its counts, and calls its recommendation provisional; one
/// interrupted during warm-up says it stopped before any measured run, not that every
/// configuration failed.
#[test]
fn incomplete_sweeps_say_so_in_every_format() {
    let mut report = fixed_report();
    report.complete = false;
    report.runs.planned = Some(20);
    let line = "Incomplete sweep (13 of 20 measured runs): what follows is provisional; \
                coretune tune --resume on its folder continues it.";
    let table = table::render(&report, false);
    assert!(table.starts_with(line), "{table}");
    assert!(
        table.contains("Recommendation so far (incomplete sweep): 2 threads, place os"),
        "{table}"
    );
    let md = String::from_utf8(md::Markdown.render(&report).unwrap()).unwrap();
    assert!(md.contains(&format!("> **{line}**")), "{md}");
    assert!(
        md.contains("## Recommendation so far (incomplete sweep):"),
        "{md}"
    );
    let page = html::render(&report, &[]);
    assert!(
        page.contains(&format!("<p class=\"warn banner\">{line}</p>")),
        "{page}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&json::Json.render(&report).unwrap()).unwrap();
    assert_eq!(json["complete"], false);
    assert_eq!(json["runs"]["planned"], 20);
    // Stopped during warm-up: no measured run, nothing recommended, and said so.
    report.configs.clear();
    report.recommendation = None;
    report.runs.measured = 0;
    let table = table::render(&report, false);
    assert!(
        table.starts_with("Incomplete sweep (no measured run yet)"),
        "{table}"
    );
    assert!(
        table.contains(
            "The sweep stopped before any configuration completed a measured run: nothing to \
             recommend yet."
        ),
        "{table}"
    );
    assert!(!table.contains("No configuration"), "{table}");
    assert!(html::render(&report, &[]).contains("stopped before any configuration"));
}

#[test]
fn every_axis_and_grid_list_the_reports_name_exists_and_the_rest_are_other_axes() {
    use coretune_core::grid::{Family, Mem};
    // A family's fields are the named axes: nothing else is "other" today.
    let names: std::collections::BTreeSet<&str> = Family::field_names().iter().copied().collect();
    let named: std::collections::BTreeSet<&str> = AXES_BY_NAME.into_iter().collect();
    assert_eq!(
        names, named,
        "a field of Family was renamed or the list here is stale"
    );
    let set = Family::new(Policy::Compact)
        .with_mem("interleave".parse::<Mem>().unwrap())
        .with_instances(2);
    assert!(other_axes(&set).is_empty());
    // Every list of a grid with every axis set is named.
    let grid = Grid::new(vec![1, 2], vec![Policy::Compact])
        .with_mems(vec![Mem::Default, "interleave".parse().unwrap()])
        .with_instances(vec![1, 2]);
    let json = serde_json::to_value(&grid).unwrap();
    let lists: std::collections::BTreeSet<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(lists, GRID_LISTS_BY_NAME.into_iter().collect());
    assert!(other_grid_lists(&grid).is_empty());
}

#[test]
fn an_axis_added_to_family_shows_by_its_name_and_value_when_set() {
    use coretune_core::grid::Family;
    // What a family with one more axis would serialize as: its JSON, one field longer.
    #[derive(serde::Serialize)]
    struct FamilyWithTurbo {
        #[serde(flatten)]
        family: Family,
        #[serde(skip_serializing_if = "Option::is_none")]
        turbo: Option<&'static str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        governors: Vec<&'static str>,
    }
    let family = Family::new(Policy::Spread);
    let set = FamilyWithTurbo {
        family: family.clone(),
        turbo: Some("off"),
        governors: vec!["performance", "powersave"],
    };
    assert_eq!(
        json_fields(&set, &AXES_BY_NAME),
        [
            ("governors".to_owned(), "performance, powersave".to_owned()),
            ("turbo".to_owned(), "off".to_owned())
        ]
    );
    // At its default it is absent from the JSON, so from every report.
    let default = FamilyWithTurbo {
        family,
        turbo: None,
        governors: Vec::new(),
    };
    assert!(json_fields(&default, &AXES_BY_NAME).is_empty());
}
