//! The real binary in a pseudo-terminal, for the chaos and slow-link tests: a reader thread
//! feeds a terminal emulator (optionally reading at a throttled rate, as over a slow link), and
//! the tests wait for text on the emulated screen.
#![allow(dead_code)]

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Console {
    parser: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    pub home: tempfile::TempDir,
}

/// `gpuplane ARGS` at `cols`×`rows` with its own home; its output is read `chunk` bytes at a
/// time with `pause` after each read (`None`: as fast as it comes).
pub fn spawn(cols: u16, rows: u16, args: &[&str], throttle: Option<(usize, Duration)>) -> Console {
    let pair = native_pty_system()
        .openpty(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 })
        .expect("openpty");
    let home = tempfile::tempdir().expect("tempdir");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_gpuplane"));
    cmd.env_clear();
    cmd.env("HOME", home.path());
    cmd.env("XDG_CONFIG_HOME", home.path().join("config"));
    cmd.env("XDG_STATE_HOME", home.path().join("state"));
    cmd.env("TERM", "xterm-256color");
    cmd.env("LANG", "C.UTF-8");
    cmd.env("PATH", "/usr/bin:/bin:/usr/sbin");
    cmd.env("TZ", "UTC");
    cmd.args(args);
    let child = pair.slave.spawn_command(cmd).expect("spawn gpuplane");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("reader");
    let writer = pair.master.take_writer().expect("writer");
    let parser = Arc::new(Mutex::new(vt100::Parser::new(
        std::num::NonZeroU16::new(rows).unwrap(),
        std::num::NonZeroU16::new(cols).unwrap(),
        0,
    )));
    let p = parser.clone();
    let master = pair.master;
    std::thread::spawn(move || {
        let _master = master;
        let mut buf = vec![0u8; 8192];
        let (chunk, pause) = throttle.unwrap_or((buf.len(), Duration::ZERO));
        loop {
            match reader.read(&mut buf[..chunk]) {
                Ok(0) | Err(_) => break,
                Ok(n) => p.lock().unwrap().process(&buf[..n]),
            }
            std::thread::sleep(pause);
        }
    });
    Console { parser, writer, child, home }
}

impl Console {
    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    pub fn header(&self) -> String {
        self.screen().lines().next().unwrap_or_default().to_string()
    }

    /// Waits up to `secs` for `pred` to hold on the screen; false if it never did.
    pub fn wait_until(&self, secs: u64, pred: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if pred(&self.screen()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn wait_for(&self, text: &str, secs: u64) {
        if !self.wait_until(secs, |s| s.contains(text)) {
            panic!("timed out waiting for {text:?}; screen:\n{}", self.screen());
        }
    }

    pub fn send(&mut self, s: &str) {
        self.writer.write_all(s.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Presses view keys (jobs, then nodes) and waits for each view's title: the console
    /// answers keys. Panics when a key gets no frame within `secs`.
    pub fn answers_keys(&mut self, secs: u64) {
        for (key, title) in [("7", " Jobs ["), ("2", " Nodes [")] {
            self.send(key);
            if !self.wait_until(secs, |s| s.contains(title)) {
                panic!("no frame for key {key:?} within {secs} s; screen:\n{}", self.screen());
            }
        }
    }

    /// The number in the Nodes view's title (`[N]` or `[filtered: n of N]`).
    pub fn node_rows(&self) -> Option<usize> {
        let s = self.screen();
        let t = s.split(" Nodes [").nth(1)?;
        let t = t.strip_prefix("filtered: ").map_or(t, |r| r.split(" of ").nth(1).unwrap_or(r));
        t.split(']').next()?.parse().ok()
    }

    /// The line of the Sources view that names `source` (opened and left again).
    pub fn source_line(&mut self, source: &str) -> String {
        self.send(":sources\r");
        self.wait_for(" Sources [", 10);
        std::thread::sleep(Duration::from_millis(300));
        let s = self.screen();
        let line = s
            .lines()
            .skip_while(|l| !l.contains(" Sources ["))
            .skip(1)
            .find(|l| l.contains(source))
            .unwrap_or_default()
            .to_string();
        self.send("2");
        self.wait_for(" Nodes [", 10);
        line
    }

    /// Quits and waits for the exit (panics if it does not exit cleanly).
    pub fn quit(&mut self) {
        self.send("q");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{status:?}");
                return;
            }
            assert!(Instant::now() < deadline, "gpuplane did not quit; screen:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The console's log (after it quit).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.home.path().join("state/gpuplane/gpuplane.log")).unwrap_or_default()
    }

    /// The number of frames that showed the effect of keys (the console's own "key to frame"
    /// summary in its log, written at exit).
    pub fn key_frames(&self) -> usize {
        let log = self.log();
        let line =
            log.lines().rfind(|l| l.contains("key to frame")).expect("key-to-frame summary in the log");
        let n = line.split_whitespace().find_map(|w| w.strip_prefix("keys=")).expect("keys=");
        n.parse().expect("a count")
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}
