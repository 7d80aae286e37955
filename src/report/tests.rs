//! Unit tests of report writing: layout, atomicity, escaping, ids and figures.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use crate::audit::{AuditConfig, audit_pair};
use crate::mechanisms::{PrivacyClaim, catalogue};
use crate::testers::{HockeyStickTester, PropertyTester};

/// A fresh directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "dp-audit-report-unit-{}-{name}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn audit(id: &str, claim: Option<PrivacyClaim>, n: usize) -> (AuditReport, PlotData) {
    let entry = catalogue::build(id, &Default::default()).unwrap();
    let m = &*entry.mechanism;
    let claim = claim.unwrap_or_else(|| m.claim());
    let testers: Vec<Box<dyn PropertyTester>> = vec![Box::new(HockeyStickTester::default())];
    let config = AuditConfig {
        seed: 1,
        samples_per_side: n,
        failure_probability: 0.01,
    };
    let mut r = audit_pair(m, &claim, &entry.witness, &testers, &config).unwrap();
    r.mechanism.catalogue_status = Some(entry.status.word().to_string());
    let plots = PlotData::draw(m, &entry.witness, 1, 3000).unwrap();
    (r, plots)
}

/// Decodes a PNG and checks it is a real picture: sane size and more than one colour (at
/// least a few hundred pixels differ from the background).
fn assert_png_has_content(path: &Path) {
    let file = fs::File::open(path).unwrap();
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert!(
        info.width >= 400 && info.height >= 300,
        "{path:?}: {info:?}"
    );
    let bpp = info.line_size / info.width as usize;
    let px: Vec<&[u8]> = buf[..info.buffer_size()].chunks(bpp).collect();
    let background = px[0];
    let differing = px.iter().filter(|p| *p != &background).count();
    assert!(
        differing > 500,
        "{path:?} is (nearly) a single colour: {differing} pixels differ"
    );
    let mut colours: Vec<&[u8]> = px.clone();
    colours.sort();
    colours.dedup();
    assert!(colours.len() >= 3, "{path:?}: {} colours", colours.len());
}

fn pngs_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "png"))
        .collect();
    v.sort();
    v
}

fn no_temporaries(dir: &Path) {
    for e in fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with(".tmp-")
                && !name.starts_with(".old-")
                && !name.starts_with(".write-probe"),
            "left behind in {dir:?}: {name}"
        );
    }
}

#[test]
fn run_report_has_json_html_and_real_pngs() {
    let s = Scratch::new("run");
    let (r, plots) = audit("laplace-sum-ignores-range", None, 20_000);
    let index = write_run_report(&s.0, &r, &plots).unwrap();
    let dir = index.parent().unwrap();
    assert_eq!(
        dir.file_name().unwrap().to_string_lossy(),
        run_id(&r).unwrap()
    );
    // audit.json is the report.
    let back: AuditReport =
        serde_json::from_str(&fs::read_to_string(dir.join(REPORT_FILE)).unwrap()).unwrap();
    assert_eq!(back, r);
    let html = fs::read_to_string(&index).unwrap();
    assert!(html.contains("Violation found"), "{html}");
    assert!(html.contains("src=\"distribution-0.png\"") && html.contains("src=\"bounds.png\""));
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));
    let pngs = pngs_in(dir);
    assert_eq!(pngs.len(), 2, "{pngs:?}");
    for p in &pngs {
        assert_png_has_content(p);
    }
    // The directory index lists the run.
    let top = fs::read_to_string(s.0.join("index.html")).unwrap();
    assert!(top.contains(&run_id(&r).unwrap()) && top.contains("violation found"));
    no_temporaries(&s.0);
    no_temporaries(dir);
}

#[test]
fn profile_claim_vector_and_discrete_outputs_plot() {
    let s = Scratch::new("kinds");
    // A profile claim (μ-GDP) gets the δ(ε) figure.
    let (r, plots) = audit(
        "gaussian-sum-analytic",
        Some(PrivacyClaim::gaussian_dp(1.0).unwrap()),
        10_000,
    );
    let dir = write_run_report(&s.0, &r, &plots).unwrap();
    let dir = dir.parent().unwrap();
    assert!(dir.join("profile.png").is_file());
    assert!(
        fs::read_to_string(dir.join("index.html"))
            .unwrap()
            .contains("profile.png")
    );
    // A vector output gets one figure per coordinate (at most 4); a discrete one gets bars.
    for id in ["noisy-histogram", "randomized-response", "svt1"] {
        let (r, plots) = audit(id, None, 5_000);
        let dim = plots.sides.as_ref().unwrap().0.dim();
        let index = write_run_report(&s.0, &r, &plots).unwrap();
        let d = index.parent().unwrap();
        for j in 0..dim.min(MAX_PLOTTED_COORDINATES) {
            assert!(
                d.join(format!("distribution-{j}.png")).is_file(),
                "{id} {j}"
            );
        }
        assert!(
            !d.join(format!("distribution-{}.png", MAX_PLOTTED_COORDINATES))
                .exists()
        );
    }
    for entry in fs::read_dir(&s.0).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            for png in pngs_in(&p) {
                assert_png_has_content(&png);
            }
        }
    }
    no_temporaries(&s.0);
}

#[test]
fn run_id_is_deterministic_and_ignores_wall_time() {
    let (r, _) = audit("laplace-sum", None, 2_000);
    let mut r2 = r.clone();
    r2.wall_time_seconds = Some(123.0);
    assert_eq!(run_id(&r).unwrap(), run_id(&r2).unwrap());
    let id = run_id(&r).unwrap();
    assert!(id.starts_with("laplace-sum-seed1-") && id.len() == "laplace-sum-seed1-".len() + 8);
    let mut r3 = r.clone();
    r3.seed = 2;
    assert_ne!(run_id(&r).unwrap(), run_id(&r3).unwrap());
    assert_eq!(slug("../evil/<id>"), "evil--id");
    assert_eq!(slug("..."), "run");
}

#[test]
fn strings_from_mechanisms_are_escaped() {
    let s = Scratch::new("escape");
    let (mut r, _) = audit("laplace-sum", None, 2_000);
    r.mechanism.id = "<script>alert(1)</script>".into();
    r.mechanism.claim_source = "\"><img src=x onerror=alert(2)>".into();
    r.testers = vec!["<b>t</b>".into()];
    let index = write_run_report(&s.0, &r, &PlotData::none()).unwrap();
    // The id is a path component: only safe characters survive.
    let name = index
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("script-alert-1---script-seed1-"), "{name}");
    for page in [index.clone(), s.0.join("index.html")] {
        let html = fs::read_to_string(&page).unwrap();
        assert!(!html.contains("<script"), "{page:?}");
        assert!(!html.contains("<img src=x"), "{page:?}");
        assert!(!html.contains("<b>t</b>"), "{page:?}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page:?}"
        );
    }
}

#[test]
fn a_failed_run_leaves_nothing() {
    let s = Scratch::new("fail");
    let err = write_dir_atomically(&s.0, "some-run", |tmp| {
        write_atomic(&tmp.join(REPORT_FILE), b"{}")?;
        Err(Error::InvalidConfig("drawing failed".into()))
    });
    assert!(err.is_err());
    assert_eq!(
        fs::read_dir(&s.0).unwrap().count(),
        0,
        "nothing may be left"
    );
    // A successful run replaces an earlier directory of the same id.
    for content in [&b"one"[..], b"two"] {
        write_dir_atomically(&s.0, "some-run", |tmp| {
            write_atomic(&tmp.join("f"), content)
        })
        .unwrap();
    }
    assert_eq!(fs::read(s.0.join("some-run/f")).unwrap(), b"two");
    no_temporaries(&s.0);
}

#[test]
fn unwritable_report_dir_is_a_clear_error() {
    let s = Scratch::new("unwritable");
    let file = s.0.join("a-file");
    fs::write(&file, b"x").unwrap();
    let bad = file.join("reports");
    let msg = prepare_report_dir(&bad).unwrap_err().to_string();
    assert!(msg.contains(&bad.display().to_string()), "{msg}");
    assert!(msg.contains("--report-dir"), "{msg}");
    prepare_report_dir(&s.0.join("new/nested")).unwrap();
    no_temporaries(&s.0.join("new/nested"));
}

#[test]
fn rerender_keeps_distribution_figures() {
    let s = Scratch::new("rerender");
    let (r, plots) = audit("laplace-sum-ignores-range", None, 5_000);
    let index = write_run_report(&s.0, &r, &plots).unwrap();
    let dir = index.parent().unwrap().to_path_buf();
    let dist = fs::read(dir.join("distribution-0.png")).unwrap();
    fs::remove_file(&index).unwrap();
    fs::remove_file(dir.join("bounds.png")).unwrap();
    let again = rerender(&dir.join(REPORT_FILE), &s.0.join("unused")).unwrap();
    assert_eq!(again, index);
    assert!(
        fs::read_to_string(&index)
            .unwrap()
            .contains("distribution-0.png")
    );
    assert!(dir.join("bounds.png").is_file());
    assert_eq!(fs::read(dir.join("distribution-0.png")).unwrap(), dist);
    assert!(!s.0.join("unused").exists());
    // A saved `--json` output becomes a run directory of the same id, keeping the figures.
    let saved = s.0.join("saved.json");
    fs::write(&saved, deterministic_json(&r).unwrap()).unwrap();
    let third = rerender(&saved, &s.0).unwrap();
    assert_eq!(third, index);
    assert_eq!(fs::read(dir.join("distribution-0.png")).unwrap(), dist);
    no_temporaries(&s.0);
}

#[test]
fn sweep_report_round_trips_and_plots() {
    let s = Scratch::new("sweep");
    let mut points = Vec::new();
    for (i, v) in [1.0, 2.0, 3.0].into_iter().enumerate() {
        points.push(SweepPoint {
            value: v,
            status: if i == 0 { "correct" } else { "buggy" }.into(),
            tester: "hockey-stick".into(),
            detections: [0, 4, 10][i],
            repeats: 10,
            median_margin: [-0.01, 0.02, 0.5][i],
        });
    }
    let sweep = SweepReport {
        schema_version: SCHEMA_VERSION,
        kind: "sweep".into(),
        tool_version: "0".into(),
        mechanism: "laplace-sum-ignores-range".into(),
        fixed_params: vec![],
        parameter: "range".into(),
        claims: points
            .iter()
            .map(|p| SweepClaim {
                value: p.value,
                claim: "pure:1".into(),
            })
            .collect(),
        testers: vec!["hockey-stick".into()],
        repeats: 10,
        samples_per_side: 1000,
        failure_probability_per_audit: 0.05,
        seed: 0,
        points,
        notes: vec!["a <note>".into()],
        wall_time_seconds: Some(1.5),
    };
    let index = write_sweep_report(&s.0, &sweep).unwrap();
    let dir = index.parent().unwrap();
    match read_report(&dir.join(REPORT_FILE)).unwrap() {
        ReportFile::Sweep(back) => assert_eq!(*back, sweep),
        other => panic!("{other:?}"),
    }
    assert_png_has_content(&dir.join("sweep.png"));
    let html = fs::read_to_string(&index).unwrap();
    assert!(html.contains("14 of 30 audits found a violation"), "{html}");
    assert!(html.contains("a &lt;note&gt;"), "notes are shown, escaped");
    let top = fs::read_to_string(s.0.join("index.html")).unwrap();
    assert!(top.contains("sweep over range"));
    // Re-rendering in place works for sweeps too.
    fs::remove_file(&index).unwrap();
    rerender(&dir.join(REPORT_FILE), &s.0).unwrap();
    assert!(index.is_file());
    no_temporaries(&s.0);
}

#[test]
fn reading_rejects_other_schema_versions() {
    let s = Scratch::new("schema");
    let (r, _) = audit("laplace-sum", None, 2_000);
    let mut v = serde_json::to_value(&r).unwrap();
    let f = s.0.join("audit.json");
    // Version 1 files (before bounds on the larger direction) are still read.
    v["schema_version"] = 1.into();
    fs::write(&f, v.to_string()).unwrap();
    assert!(read_report(&f).is_ok());
    v["schema_version"] = 99.into();
    fs::write(&f, v.to_string()).unwrap();
    let msg = read_report(&f).unwrap_err().to_string();
    assert!(
        msg.contains("schema_version = 99") && msg.contains("allowed: 1 or 2"),
        "{msg}"
    );
    fs::write(&f, "not json").unwrap();
    assert!(
        read_report(&f)
            .unwrap_err()
            .to_string()
            .contains("not JSON")
    );
}

fn sequential_audit(id: &str, max: usize) -> crate::sequential::SequentialReport {
    use crate::sequential::{SequentialConfig, audit_sequential};
    let entry = catalogue::build(id, &Default::default()).unwrap();
    let m = &*entry.mechanism;
    let config = SequentialConfig {
        seed: 1,
        max_samples_per_side: max,
        first_batch: 100,
        failure_probability: 0.001,
    };
    let mut r = audit_sequential(m, &m.claim(), &entry.witness, &config).unwrap();
    r.mechanism.catalogue_status = Some(entry.status.word().to_string());
    r
}

/// A sequential run's report: audit.json (read back as a sequential report), index.html with
/// the verdict, the guarantee and the figure, a real wealth.png, the directory index, and
/// re-rendering in place and from saved `--json` output.
///
/// Statistics: the range bug is a gross one (the seed-0 CLI run stops after 143 releases per
/// side at β = 1e-3); failing to stop within 4000 releases is not a plausible outcome of this
/// fixed seed, and the run is deterministic, so the test cannot flake. The correct Laplace sum
/// reports a violation with probability at most β = 1e-3 (Ville's inequality).
#[test]
fn sequential_reports_are_complete_and_rerender() {
    use super::sequential::{WEALTH_FILE, sequential_id, write_sequential_report};
    let s = Scratch::new("sequential");
    let bad = sequential_audit("laplace-sum-ignores-range", 4000);
    assert_eq!(bad.verdict, Verdict::Violation);
    let index = write_sequential_report(&s.0, &bad).unwrap();
    let dir = index.parent().unwrap().to_path_buf();
    assert_eq!(
        dir.file_name().unwrap().to_string_lossy(),
        sequential_id(&bad).unwrap()
    );
    match read_report(&dir.join(REPORT_FILE)).unwrap() {
        ReportFile::Sequential(back) => assert_eq!(*back, bad),
        other => panic!("{other:?}"),
    }
    assert_png_has_content(&dir.join(WEALTH_FILE));
    let html = fs::read_to_string(&index).unwrap();
    let t = bad.stopping_time.unwrap();
    for needle in [
        "Violation found",
        "Ville&#39;s inequality",
        "ln(1/β)",
        &format!("<dd id=\"stopping-time\">{t} releases per side"),
        "id=\"samples-used\"",
        "src=\"wealth.png\"",
        "laplace-sum-ignores-range",
    ] {
        assert!(html.contains(needle), "{needle:?} missing:\n{html}");
    }
    assert!(!html.contains("<script"));
    let top = fs::read_to_string(s.0.join("index.html")).unwrap();
    assert!(top.contains("sequential run") && top.contains("violation found"));

    let good = sequential_audit("laplace-sum", 2000);
    assert_eq!(good.verdict, Verdict::NoViolation);
    let good_index = write_sequential_report(&s.0, &good).unwrap();
    let html = fs::read_to_string(&good_index).unwrap();
    assert!(html.contains("No violation found"), "{html}");
    assert!(
        html.contains("This does not show that the mechanism keeps its claim"),
        "{html}"
    );
    assert!(
        html.contains("none: the wealth never reached 1/β"),
        "{html}"
    );
    assert_png_has_content(&good_index.parent().unwrap().join(WEALTH_FILE));

    // Re-rendering in place redraws the page and the figure from audit.json alone.
    fs::remove_file(&index).unwrap();
    fs::remove_file(dir.join(WEALTH_FILE)).unwrap();
    assert_eq!(
        rerender(&dir.join(REPORT_FILE), &s.0.join("unused")).unwrap(),
        index
    );
    assert!(index.is_file() && dir.join(WEALTH_FILE).is_file());
    assert!(!s.0.join("unused").exists());
    // Saved `--json` output (no wall time) becomes a run folder of the same id.
    let saved = s.0.join("saved.json");
    fs::write(&saved, super::sequential::deterministic_json(&bad).unwrap()).unwrap();
    assert_eq!(rerender(&saved, &s.0).unwrap(), index);
    no_temporaries(&s.0);
    no_temporaries(&dir);
}

/// Strings in a sequential report are escaped on its page.
#[test]
fn sequential_strings_are_escaped() {
    let s = Scratch::new("sequential-escape");
    let mut r = sequential_audit("laplace-sum-ignores-range", 1000);
    r.mechanism.id = "<script>alert(1)</script>".into();
    r.mechanism.claim_source = "<b>src</b>".into();
    if let Some(c) = r.components.first_mut() {
        c.last_event = Some("<img src=x onerror=alert(1)>".into());
    }
    let index = super::sequential::write_sequential_report(&s.0, &r).unwrap();
    let html = fs::read_to_string(&index).unwrap();
    assert!(!html.contains("<script>") && !html.contains("<img src=x"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("&lt;b&gt;src&lt;/b&gt;"));
    let top = fs::read_to_string(s.0.join("index.html")).unwrap();
    assert!(!top.contains("<script>"));
}
