"""The CLI's progress bars (cli/common.py): drawn on a terminal's stderr only, one a phase."""

import io
import sys

from socorro_store.cli.common import phased_progress_bar, progress_bar


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_no_bar_with_json_or_off_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress_bar(False, "export")[0] is None
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert progress_bar(True, "export")[0] is None
    assert phased_progress_bar(True)[0] is None


def test_one_bar_a_phase_on_a_terminal(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    update, close = phased_progress_bar(False)
    update("days", 1, 2)
    update("days", 2, 2)
    update("rankings", 3, 3)
    close()
    drawn = terminal.getvalue()
    assert "days" in drawn and "rankings" in drawn and "100%" in drawn


def test_a_labelled_bar_is_one_phase(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    update, close = progress_bar(False, "import")
    update(0, 0)  # an empty import still draws a bar of length 1
    update(5, 10)
    close()
    assert "import" in terminal.getvalue() and "50%" in terminal.getvalue()
