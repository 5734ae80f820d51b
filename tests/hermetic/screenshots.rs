//! The pictures in the README: views of the simulator (seed 42, its fixed clock, times in UTC)
//! drawn through the real drawing code at 120x36, turned into SVG with the theme's colours and
//! styles. They are committed under docs/screenshots/; this test fails when one no longer
//! matches what the code draws. `scripts/screenshots` rewrites them (docs/screenshots.md).

use crate::common::{app, key, typed};
use gpuplane::tui::app::App;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::KeyCode;
use ratatui::style::{Color, Modifier};
use std::path::PathBuf;

const W: u16 = 120;
const H: u16 = 36;
/// Set (to anything) to write the pictures instead of comparing them.
const WRITE: &str = "GPUPLANE_WRITE_SCREENSHOTS";
const REGENERATE: &str = "scripts/screenshots";

/// Name, what it shows (the SVG's title) and how to get there from the start screen.
type Picture = (&'static str, &'static str, Box<dyn Fn(&mut App)>);

fn pictures() -> Vec<Picture> {
    fn keys(k: &'static str) -> Box<dyn Fn(&mut App)> {
        Box::new(move |a| typed(a, k))
    }
    let mut v: Vec<Picture> = vec![
        ("overview", "Overview: every plane's health and the incidents, worst first", keys("")),
        ("nodes-detail", "Nodes with the detail pane of the first node", keys(":nodes\r\r")),
        ("gpu-wall", "The GPU wall: every GPU a cell, by utilisation", keys(":wall\r")),
        ("topology", "Topology: racks, a node open, its nvidia-smi topo -m matrix", keys(":topo\r\rj\r")),
        ("fabric", "Fabric: every InfiniBand port and the suspect nodes", keys(":fabric\r")),
        ("queues-my-jobs", "Queues, and my jobs with their place in the queue", keys(":queues\r")),
        ("cost", "Cost per team over the last 24 hours", keys(":cost\r")),
        (
            "confirm-drain",
            "The confirmation dialog: the plan of a drain, its reason and the typed name",
            Box::new(|a: &mut App| {
                typed(a, ":nodes state=alloc\rr");
                // A reason and a ticket, as an operator fills them in.
                typed(a, "NCCL busbw 62% of baseline");
                key(a, KeyCode::Tab);
                typed(a, "OPS-4242");
                key(a, KeyCode::Tab);
                typed(a, "gpu-001");
            }),
        ),
    ];
    for (name, title, k) in [
        ("storage", "Storage: fill, throughput and time to full", ":storage\r\r"),
        (
            "jobs",
            "Jobs with a pending job's reason in plain words",
            ":jobs user==researcher state=pending\r\r",
        ),
        ("quotas", "Quotas per team", ":quotas\r"),
        ("sources", "Sources: what answers and what does not", ":sources\r"),
        ("help", "The keys", "?"),
    ] {
        v.push((name, title, keys(k)));
    }
    v
}

/// A ratatui colour as the terminal colour it stands for.
fn colour(c: Color) -> Option<anstyle::Color> {
    use anstyle::AnsiColor as A;
    let ansi = |a: A| Some(anstyle::Color::Ansi(a));
    match c {
        Color::Reset => None,
        Color::Black => ansi(A::Black),
        Color::Red => ansi(A::Red),
        Color::Green => ansi(A::Green),
        Color::Yellow => ansi(A::Yellow),
        Color::Blue => ansi(A::Blue),
        Color::Magenta => ansi(A::Magenta),
        Color::Cyan => ansi(A::Cyan),
        Color::Gray => ansi(A::White),
        Color::DarkGray => ansi(A::BrightBlack),
        Color::LightRed => ansi(A::BrightRed),
        Color::LightGreen => ansi(A::BrightGreen),
        Color::LightYellow => ansi(A::BrightYellow),
        Color::LightBlue => ansi(A::BrightBlue),
        Color::LightMagenta => ansi(A::BrightMagenta),
        Color::LightCyan => ansi(A::BrightCyan),
        Color::White => ansi(A::BrightWhite),
        Color::Indexed(i) => Some(anstyle::Color::Ansi256(anstyle::Ansi256Color(i))),
        Color::Rgb(r, g, b) => Some(anstyle::Color::Rgb(anstyle::RgbColor(r, g, b))),
    }
}

/// The frame as a terminal would receive it: text with SGR escapes (what anstyle-svg reads).
fn ansi(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut skip = 0;
        let mut last = anstyle::Style::new();
        for x in 0..buf.area.width {
            let cell = &buf[(x, y)];
            if skip > 0 {
                // the hidden half of a wide character
                skip -= 1;
                continue;
            }
            let mut effects = anstyle::Effects::new();
            for (m, e) in [
                (Modifier::BOLD, anstyle::Effects::BOLD),
                (Modifier::DIM, anstyle::Effects::DIMMED),
                (Modifier::ITALIC, anstyle::Effects::ITALIC),
                (Modifier::UNDERLINED, anstyle::Effects::UNDERLINE),
                (Modifier::REVERSED, anstyle::Effects::INVERT),
                (Modifier::CROSSED_OUT, anstyle::Effects::STRIKETHROUGH),
            ] {
                if cell.modifier.contains(m) {
                    effects |= e;
                }
            }
            let style =
                anstyle::Style::new().fg_color(colour(cell.fg)).bg_color(colour(cell.bg)).effects(effects);
            if style != last {
                out.push_str(&format!("{}{}", last.render_reset(), style.render()));
                last = style;
            }
            out.push_str(cell.symbol());
            skip = unicode_width::UnicodeWidthStr::width(cell.symbol()).saturating_sub(1);
        }
        out.push_str(&format!("{}\n", last.render_reset()));
    }
    out
}

/// The SVG of one picture: the frame in a terminal window (dark background, rounded corners,
/// a monospace font), its title for screen readers.
fn svg(a: &mut App, title: &str) -> String {
    let mut term = Terminal::new(TestBackend::new(W, H)).expect("terminal");
    let now = a.state().now;
    term.draw(|f| gpuplane::tui::draw::draw(f, a, now)).expect("draw");
    let text = ansi(term.backend().buffer());
    let svg = anstyle_svg::Term::new()
        .palette(anstyle_svg::WIN10_CONSOLE)
        .fg_color(anstyle::Color::Rgb(anstyle::RgbColor(204, 204, 204)))
        .bg_color(anstyle::Color::Rgb(anstyle::RgbColor(12, 12, 12)))
        .render_svg(&text);
    // The accessible name: the first element inside <svg>.
    let title = title.replace('&', "&amp;").replace('<', "&lt;");
    match svg.split_once('\n') {
        Some((head, rest)) => format!("{head}\n  <title>gpuplane: {title}</title>\n{rest}"),
        None => svg,
    }
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots")
}

#[test]
fn committed_screenshots_match_what_the_code_draws() {
    let write = std::env::var_os(WRITE).is_some();
    let mut stale = Vec::new();
    for (name, title, prepare) in pictures() {
        let mut a = app();
        prepare(&mut a);
        let got = svg(&mut a, title);
        let path = dir().join(format!("{name}.svg"));
        if write {
            std::fs::create_dir_all(dir()).expect("docs/screenshots");
            std::fs::write(&path, &got).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(committed) if committed == got => {}
            Ok(_) => stale.push(format!("{name}.svg differs")),
            Err(e) => stale.push(format!("{name}.svg: {e}")),
        }
    }
    assert!(
        stale.is_empty(),
        "the screenshots in docs/screenshots/ no longer match what the code draws ({}); \
         regenerate them with `{REGENERATE}` and review and commit the result",
        stale.join(", ")
    );
    if !write {
        // No picture is left behind when one is renamed or dropped.
        let names: Vec<String> = pictures().iter().map(|(n, _, _)| format!("{n}.svg")).collect();
        for e in std::fs::read_dir(dir()).expect("docs/screenshots") {
            let f = e.expect("entry").file_name().to_string_lossy().to_string();
            assert!(!f.ends_with(".svg") || names.contains(&f), "{f} is no longer drawn: remove it");
        }
    }
}

/// The SVG carries the theme: colours, reverse video and bold reach it; text is escaped.
#[test]
fn the_svg_has_the_themes_colours_and_styles() {
    let mut a = app();
    typed(&mut a, ":nodes\r");
    let s = svg(&mut a, "nodes <&>");
    assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"), "{s}");
    assert!(s.contains("<title>gpuplane: nodes &lt;&amp;></title>"), "{s}");
    assert!(s.contains("font-weight: bold"), "bold headers");
    assert!(s.contains("fill: #"), "colours");
    assert!(s.contains("gpu-001"), "the text itself");
    // The dark theme's crit style is red: a drained node's state is drawn in it.
    let t = gpuplane::tui::theme::Theme::builtin("dark");
    assert!(t.crit.fg.is_some());
}
