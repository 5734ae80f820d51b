//! Snapshot tests of every view at 80×24 and 160×48 from a fixed simulator seed.

mod common;

use common::{app, app_with_acceptance, render, typed};

fn snap(name: &str, keys: &str) {
    for (w, h) in [(80u16, 24u16), (160, 48)] {
        let mut a = app();
        typed(&mut a, keys);
        let screen = render(&mut a, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }
}

#[test]
fn overview() {
    snap("overview", "");
}

#[test]
fn overview_incident_detail() {
    snap("overview_detail", "\r");
}

#[test]
fn nodes() {
    snap("nodes", ":nodes\r");
}

#[test]
fn nodes_detail() {
    snap("nodes_detail", ":nodes\r\r");
}

#[test]
fn gpus_table() {
    snap("gpus", ":gpus\r");
}

#[test]
fn gpus_wall_util_and_temp() {
    snap("wall", ":wall\r");
    snap("wall_temp", ":wall\rt");
}

#[test]
fn topology_with_a_node_open() {
    // open the first pool, go to its first node and open it
    snap("topology", ":topo\r\rj\r");
}

#[test]
fn fabric_with_acceptance_results() {
    for (w, h) in [(80u16, 24u16), (160, 48)] {
        let mut a = app_with_acceptance();
        typed(&mut a, ":fabric\r");
        let screen = render(&mut a, w, h);
        insta::assert_snapshot!(format!("fabric_acceptance_{w}x{h}"), screen);
    }
}

#[test]
fn fabric() {
    snap("fabric", ":fabric\r");
}

#[test]
fn storage() {
    snap("storage", ":storage\r\r");
}

#[test]
fn jobs() {
    snap("jobs", ":jobs\r");
}

#[test]
fn jobs_pending_detail() {
    snap("jobs_pending_detail", ":jobs user==researcher state=pending\r\r");
}

#[test]
fn queues_and_my_jobs() {
    snap("queues", ":queues\r");
}

#[test]
fn quotas() {
    snap("quotas", ":quotas\r");
}

#[test]
fn cost() {
    snap("cost", ":cost\r");
    snap("cost_7d", ":cost\r]");
}

#[test]
fn help() {
    snap("help", "?");
}

#[test]
fn audit_view_and_confirmation_dialog() {
    snap("audit_empty", ":audit\r");
    // drain the first allocated node: the dialog shows the plan, reason, ticket, typed name
    snap("confirm_drain", ":nodes state=alloc\rr");
}
