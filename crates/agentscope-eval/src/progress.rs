//! A one-line progress bar on stderr, drawn only when stderr is a terminal.

use std::io::{IsTerminal, Write};

/// Whether the [`Evaluator`](crate::Evaluator) draws a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Progress {
    /// On stderr when stderr is a terminal (not in CI logs, not when redirected).
    #[default]
    Auto,
    /// Never.
    Off,
}

/// The bar of one evaluation.
pub(crate) struct Bar {
    on: bool,
    total: usize,
    done: usize,
    passed: usize,
    errors: usize,
}

const WIDTH: usize = 30;

impl Bar {
    pub(crate) fn new(progress: Progress, total: usize) -> Self {
        let on = progress == Progress::Auto && std::io::stderr().is_terminal();
        let bar = Self {
            on,
            total,
            done: 0,
            passed: 0,
            errors: 0,
        };
        bar.draw();
        bar
    }

    pub(crate) fn advance(&mut self, passed: bool, error: bool) {
        self.done += 1;
        self.passed += usize::from(passed);
        self.errors += usize::from(error);
        self.draw();
    }

    pub(crate) fn finish(&self) {
        if self.on {
            let mut err = std::io::stderr().lock();
            // Clears the bar's line: the report follows.
            let _ = write!(
                err,
                "\r{:width$}\r",
                "",
                width = self.line().chars().count()
            );
            let _ = err.flush();
        }
    }

    fn draw(&self) {
        if self.on {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{}", self.line());
            let _ = err.flush();
        }
    }

    /// `[############------------------] 12/30 runs, 11 passed, 1 failed (1 error)`.
    pub(crate) fn line(&self) -> String {
        let filled = (self.done * WIDTH).checked_div(self.total).unwrap_or(WIDTH);
        let failed = self.done - self.passed;
        let errors = if self.errors > 0 {
            format!(
                " ({} error{})",
                self.errors,
                if self.errors == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        format!(
            "[{}{}] {}/{} runs, {} passed, {} failed{}",
            "#".repeat(filled),
            "-".repeat(WIDTH - filled),
            self.done,
            self.total,
            self.passed,
            failed,
            errors
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_the_share_done_and_the_outcomes() {
        let mut bar = Bar::new(Progress::Off, 4);
        assert_eq!(
            bar.line(),
            format!("[{}] 0/4 runs, 0 passed, 0 failed", "-".repeat(30))
        );
        bar.advance(true, false);
        bar.advance(false, true);
        bar.advance(false, false);
        assert_eq!(
            bar.line(),
            format!(
                "[{}{}] 3/4 runs, 1 passed, 2 failed (1 error)",
                "#".repeat(22),
                "-".repeat(8)
            )
        );
        assert_eq!(
            Bar::new(Progress::Off, 0).line(),
            format!("[{}] 0/0 runs, 0 passed, 0 failed", "#".repeat(30))
        );
    }
}
