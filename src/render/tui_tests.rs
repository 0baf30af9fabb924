//! The report browser's tests: keys driven through a test backend.

use super::*;
use crate::analysis::quality::QualitySummary;
use crate::analysis::testing::Builder;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn fixture() -> (Builder, ReportMeta) {
    let mut b = Builder::default();
    b.sample("app", 10, &["hot", "compute", "main"], 6);
    b.sample("app", 10, &["cold", "compute", "main"], 2);
    b.sample("worker", 20, &["work", "lib:start_thread"], 2);
    let meta = ReportMeta {
        event_names: vec!["cpu-clock".into()],
        lost_samples: 0,
        quality: QualitySummary::from_samples(&b.samples, &b.frames),
        quality_line: None,
    };
    (b, meta)
}

fn screen(browser: &mut Browser) -> String {
    let mut terminal = Terminal::new(TestBackend::new(100, 20)).unwrap();
    terminal.draw(|f| browser.render(f)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            text.push_str(buffer[(x, y)].symbol());
        }
        text.push('\n');
    }
    text
}

#[test]
fn draws_entries_and_expands_call_trees() {
    let (b, meta) = fixture();
    let mut browser = Browser::new(&b.samples, &b.frames, &meta, ProfileOptions::default());
    let text = screen(&mut browser);
    assert!(
        text.contains("scry report: 10 samples of 'cpu-clock'"),
        "{text}"
    );
    assert!(
        text.contains("+  80.00%   0.00%  app  app  [.] main"),
        "{text}"
    );
    assert!(text.contains("q quit"), "{text}");
    // main is the first entry (80% children): expand it.
    assert_eq!(browser.selected(), Some(0));
    browser.handle_key(KeyCode::Enter);
    let rows = browser.row_texts();
    assert!(rows[0].starts_with("- "), "{rows:?}");
    assert!(rows.iter().any(|r| r.contains("main")), "{rows:?}");
    let text = screen(&mut browser);
    // The single-child chain main → compute opens at once.
    assert!(text.contains("60.00%  hot"), "{text}");
    assert!(text.contains("20.00%  cold"), "{text}");
    // Collapse again.
    browser.handle_key(KeyCode::Up);
    browser.handle_key(KeyCode::Left);
    assert!(!screen(&mut browser).contains("60.00%  hot"));
}

#[test]
fn a_asks_for_the_selected_function_and_shows_its_text_until_esc() {
    let (b, meta) = fixture();
    let mut browser = Browser::new(&b.samples, &b.frames, &meta, ProfileOptions::default());
    let hot = browser
        .row_texts()
        .iter()
        .position(|r| r.contains("[.] hot"))
        .unwrap();
    for _ in 0..hot {
        browser.handle_key(KeyCode::Down);
    }
    assert!(screen(&mut browser).contains("a annotate"));
    browser.handle_key(KeyCode::Char('a'));
    let request = browser.take_annotate_request().expect("a request");
    assert_eq!(request.symbol, "hot");
    assert!(browser.take_annotate_request().is_none(), "asked once");
    browser.show_text(
        format!("annotate {}", request.symbol),
        vec![
            " Percent |\tdisassembly".into(),
            "  100.00 :   1000:   divl %ecx".into(),
        ],
    );
    let text = screen(&mut browser);
    assert!(
        text.contains("annotate hot") && text.contains("divl %ecx"),
        "{text}"
    );
    assert!(
        text.contains(" Percent |    disassembly"),
        "tabs as spaces: {text}"
    );
    // q in the text leaves the text, not the browser.
    browser.handle_key(KeyCode::Char('q'));
    assert!(!browser.done());
    assert!(screen(&mut browser).contains("[.] hot"));
}

#[test]
fn search_zoom_and_quit() {
    let (b, meta) = fixture();
    let mut browser = Browser::new(&b.samples, &b.frames, &meta, ProfileOptions::default());
    for c in "/cold".chars() {
        browser.handle_key(KeyCode::Char(c));
    }
    assert!(screen(&mut browser).contains("/cold"));
    browser.handle_key(KeyCode::Enter);
    let rows = browser.row_texts();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].contains("cold"));
    assert!(screen(&mut browser).contains("search 'cold'"));
    browser.handle_key(KeyCode::Esc);
    assert!(browser.row_texts().len() > 1);

    // Zoom into the thread of `work`: only worker's entries remain.
    let work = browser
        .row_texts()
        .iter()
        .position(|r| r.contains("[.] work"))
        .unwrap();
    for _ in 0..work {
        browser.handle_key(KeyCode::Down);
    }
    browser.handle_key(KeyCode::Char('t'));
    let rows = browser.row_texts();
    assert!(rows.iter().all(|r| r.contains("worker")), "{rows:?}");
    assert!(screen(&mut browser).contains("thread 20 (worker)"));
    browser.handle_key(KeyCode::Char('t'));
    assert!(browser.row_texts().iter().any(|r| r.contains("app")));

    // Zoom into a DSO: libc only.
    let libc = browser
        .row_texts()
        .iter()
        .position(|r| r.contains("libc.so.6"))
        .unwrap();
    browser.handle_key(KeyCode::Home);
    for _ in 0..libc {
        browser.handle_key(KeyCode::Down);
    }
    browser.handle_key(KeyCode::Char('d'));
    let rows = browser.row_texts();
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r.contains("libc.so.6")),
        "{rows:?}"
    );

    assert!(!browser.done());
    browser.handle_key(KeyCode::Char('q'));
    assert!(browser.done());
}
