"""The running server serves the built UI, answers the UI's own routes with its index.html, never
a file outside the build, and says how to build the UI until it is built."""

from __future__ import annotations

from pathlib import Path

from tests.playground._processes import running


def test_the_ui_before_and_after_it_is_built(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    dist.mkdir()
    (tmp_path / "secret.txt").write_text("not for the browser")
    env = {"PSYCH_STORE": f"sqlite:///{tmp_path / 'ui.db'}", "PLAYGROUND_UI_DIST": str(dist)}
    with running(tmp_path / "run", env, worker=False) as playground:
        before = playground.api.get("/agents")
        assert before.status_code == 200
        assert "npm run build --workspace apps/playground/ui" in before.text
        (dist / "assets").mkdir()
        (dist / "index.html").write_text("<!doctype html><title>console</title>")
        (dist / "assets" / "app.js").write_text("console.log('ui')")
        for path in ("/", "/agents/support", "/runs/01ABC?tab=log", "/chat/support/01ABC"):
            page = playground.api.get(path)
            assert (page.status_code, page.text) == (200, "<!doctype html><title>console</title>")
            assert page.headers["content-type"].startswith("text/html")
            assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        script = playground.api.get("/assets/app.js")
        assert script.text == "console.log('ui')"
        assert "javascript" in script.headers["content-type"]
        # A path that climbs out of the build is a UI route like any other, never the file.
        for sneaky in ("/..%2Fsecret.txt", "/assets/..%2F..%2Fsecret.txt"):
            escaped = playground.api.get(sneaky)
            assert "not for the browser" not in escaped.text
        assert playground.api.get("/api/runs/x/nothing").status_code == 404
