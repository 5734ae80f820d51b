//! Runs a program in a pseudo-terminal, plays steps and prints the screen where asked: a way
//! to record what the console shows on a machine the tests cannot reach (a GPU node).
//!
//! `pty_capture COLSxROWS STEP… -- PROGRAM ARG…`, steps: `wait:TEXT` (up to 20 s), `sleep:MS`,
//! `keys:TEXT` (typed as is), `dump` (print the screen). Ends by typing `q` and waiting for
//! the program to exit; the exit status and whether it came in time are printed.

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--").ok_or("missing -- PROGRAM")?;
    let (size, steps) = args[..split].split_first().ok_or("missing COLSxROWS")?;
    let (cols, rows) = size.split_once('x').ok_or("size: COLSxROWS")?;
    let (cols, rows): (u16, u16) = (cols.parse()?, rows.parse()?);
    let program = args.get(split + 1).ok_or("missing PROGRAM")?;
    let pair = native_pty_system().openpty(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 })?;
    let mut cmd = CommandBuilder::new(program);
    cmd.args(&args[split + 2..]);
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(std::env::current_dir()?);
    let mut child = pair.slave.spawn_command(cmd)?;
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader()?;
    let mut writer = pair.master.take_writer()?;
    let nz = |n: u16| std::num::NonZeroU16::new(n.max(1)).ok_or("zero size");
    let parser = Arc::new(Mutex::new(vt100::Parser::new(nz(rows)?, nz(cols)?, 0)));
    let p = parser.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            if let Ok(mut p) = p.lock() {
                p.process(&buf[..n]);
            }
        }
    });
    let screen = || parser.lock().map(|p| p.screen().contents()).unwrap_or_default();
    for step in steps {
        match step.split_once(':') {
            Some(("wait", text)) => {
                let deadline = Instant::now() + Duration::from_secs(20);
                while !screen().contains(text) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(50));
                }
                if !screen().contains(text) {
                    println!("--- {text:?} did not appear in 20 s");
                }
            }
            Some(("sleep", ms)) => std::thread::sleep(Duration::from_millis(ms.parse()?)),
            Some(("keys", text)) => {
                writer.write_all(text.as_bytes())?;
                writer.flush()?;
            }
            _ if step == "dump" => println!("--- screen ({cols}x{rows})\n{}", screen()),
            _ => return Err(format!("unknown step {step:?}").into()),
        }
    }
    writer.write_all(b"q")?;
    writer.flush()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait()? {
            println!("--- exited: {status:?}");
            return Ok(());
        }
        if Instant::now() > deadline {
            child.kill()?;
            println!("--- did not exit within 10 s of q; killed");
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
