//! Slow links: the real binary in a pseudo-terminal whose far end reads its output at modem
//! speed (about 56 kbit/s). Keys typed while output backs up are all applied, and the frames in
//! between are dropped, never queued: the console draws far fewer frames than keys arrived, and
//! the last frame shows the effect of every key. (scripts/slowlink measures the same link.)

use crate::pty_support::spawn;
use std::time::Duration;

const ARGS: &[&str] = &["--user", "researcher", "--refresh", "500ms", "--sim-nodes", "64"];

/// Keys typed one by one while the output crawls: each switches the view (a full redraw, more
/// than the kernel's PTY buffer holds after a few), then marks a node. Every key takes effect,
/// in far fewer frames than keys.
#[test]
fn on_a_56k_link_keys_typed_while_output_backs_up_coalesce_into_few_frames() {
    // ~7,000 bytes/s: 350 bytes every 50 ms.
    let mut c = spawn(160, 48, ARGS, Some((350, Duration::from_millis(50))));
    c.wait_for("Incidents", 60);
    c.send("2");
    c.wait_for(" Nodes [", 60);
    let rounds = 20;
    for _ in 0..rounds {
        // jobs, nodes, mark: the mark lands on the nodes only if no key was lost or reordered
        for k in ["7", "2", " "] {
            c.send(k);
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    c.wait_for(&format!("{rounds} marked"), 120);
    c.quit();
    let frames = c.key_frames();
    let keys = 1 + 3 * rounds;
    assert!(frames >= 1, "at least the last frame");
    assert!(frames < keys / 2, "{frames} frames for {keys} keys: frames were queued, not coalesced");
}

/// Keys that arrive together are applied together, then drawn once, even on a fast link.
#[test]
fn keys_that_arrive_together_are_drawn_in_one_frame() {
    let mut c = spawn(80, 24, ARGS, None);
    c.wait_for("Incidents", 30);
    c.send(":nodes\r");
    c.wait_for(" Nodes [", 30);
    c.send(&" ".repeat(30));
    c.wait_for("30 marked", 30);
    c.quit();
    let frames = c.key_frames();
    // ":nodes\r" may take a few frames of its own; 30 marks in one write take one or two.
    assert!(frames <= 10, "{frames} frames for 36 keys sent in two writes");
}
