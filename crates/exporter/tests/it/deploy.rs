//! What `deploy/` holds for operators is checked against the real tools
//! and the real exporter: the alerting rules with `promtool check rules`
//! and `promtool test rules`; every metric the rules and the Grafana
//! dashboard name must be on a real exporter's page (with a store,
//! remote_write and OTLP configured), and every dashboard query must
//! parse as PromQL; the Kubernetes and Compose files must parse as YAML
//! and size the shared in-memory file system.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use shmetrics_core::{FamilyDesc, Kind};

use crate::util::*;

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn promtool(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("cannot run promtool: install the Debian package `prometheus` (./run-tests does)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Every `shmetrics_...` metric name in `text`.
fn names_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("shmetrics_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

#[test]
fn alerting_rules_pass_promtool() {
    let dir = deploy().join("prometheus");
    let (ok, out) = promtool(&dir, &["check", "rules", "alerts.yml"]);
    assert!(ok, "promtool check rules:\n{out}");
    let (ok, out) = promtool(&dir, &["test", "rules", "alerts_test.yml"]);
    assert!(ok, "promtool test rules:\n{out}");
    // Every alert is tested firing.
    let rules = std::fs::read_to_string(dir.join("alerts.yml")).unwrap();
    let tests = std::fs::read_to_string(dir.join("alerts_test.yml")).unwrap();
    for line in rules.lines() {
        if let Some(name) = line.trim().strip_prefix("- alert: ") {
            let fired = tests
                .split("alertname: ")
                .skip(1)
                .any(|t| t.starts_with(name) && t.contains("exp_labels"));
            assert!(fired, "alerts_test.yml never expects {name} to fire");
        }
    }
}

/// The dashboard's queries, with Grafana's variables filled in.
fn dashboard_queries() -> Vec<String> {
    let text = std::fs::read_to_string(deploy().join("grafana/shmetrics.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            let e = t["expr"].as_str().unwrap();
            out.push(
                e.replace("$__rate_interval", "5m")
                    .replace("$__range", "1h")
                    .replace("$job", ".*")
                    .replace("$instance", ".*"),
            );
        }
    }
    assert!(out.len() > 10, "{out:?}");
    out
}

#[test]
fn dashboard_queries_parse() {
    // promtool parses PromQL in rules: one recording rule per query.
    let dir = tempfile::tempdir().unwrap();
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, q) in dashboard_queries().iter().enumerate() {
        rules.push_str(&format!(
            "      - record: dashboard_query_{i}\n        expr: {}\n",
            serde_json::to_string(q).unwrap()
        ));
    }
    std::fs::write(dir.path().join("q.yml"), &rules).unwrap();
    let (ok, out) = promtool(dir.path(), &["check", "rules", "q.yml"]);
    assert!(ok, "{out}\n{rules}");
}

#[test]
fn every_metric_named_in_deploy_is_on_a_real_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deploy.metrics");
    let _store = store_with_counter(
        &path,
        &FamilyDesc::new("deploy_jobs_total", Kind::Counter).help("Jobs."),
        &[],
        1.0,
    );
    // Pushes to a closed port: the families exist all the same.
    let serve = Serve::on_store(
        &path,
        &[
            "--web.exporter-metrics",
            "--remote-write.url",
            "http://127.0.0.1:1/api/v1/write",
            "--otlp.url",
            "http://127.0.0.1:1/v1/metrics",
        ],
    );
    let page = serve.metrics();
    let on_page: BTreeSet<String> = page
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect();
    let rules = std::fs::read_to_string(deploy().join("prometheus/alerts.yml")).unwrap();
    let mut named = names_in(&rules);
    for q in dashboard_queries() {
        named.extend(names_in(&q));
    }
    let missing: Vec<&String> = named.iter().filter(|n| !on_page.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "named in deploy/ but not on the exporter's page: {missing:?}\n{page}"
    );
}

#[test]
fn manifests_parse_and_size_dev_shm() {
    let check = r#"
import sys, yaml
k8s = list(yaml.safe_load_all(open(sys.argv[1])))
kinds = [d["kind"] for d in k8s]
assert kinds == ["Deployment", "Service"], kinds
pod = k8s[0]["spec"]["template"]["spec"]
shm = [v for v in pod["volumes"] if v["name"] == "shm"][0]["emptyDir"]
assert shm["medium"] == "Memory" and shm["sizeLimit"], shm
for c in pod["containers"]:
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert mounts.get("/dev/shm") == "shm", c["name"]
exporter = [c for c in pod["containers"] if c["name"] == "shmetrics"][0]
assert exporter["readinessProbe"]["httpGet"]["path"] == "/-/ready"
assert exporter["livenessProbe"]["httpGet"]["path"] == "/-/healthy"
compose = yaml.safe_load(open(sys.argv[2]))
app, exp = compose["services"]["app"], compose["services"]["shmetrics"]
assert app["ipc"] == "shareable" and app["shm_size"], app
assert exp["ipc"] == "service:app", exp
print(exporter["args"][0], exp["command"][0])
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(check)
        .arg(deploy().join("kubernetes/sidecar.yaml"))
        .arg(deploy().join("compose/compose.yaml"))
        .output()
        .expect("cannot run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "serve serve");
}

/// The flags the manifests pass to `shmetrics serve` are accepted by it.
#[test]
fn manifest_flags_are_accepted() {
    for flag in ["--web.listen-address=0.0.0.0:9816", "--log.format=json"] {
        let out = Command::new(shmetrics_bin())
            .args(["serve", "--store", "/nonexistent", flag, "--help"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{flag}: {out:?}");
    }
}
