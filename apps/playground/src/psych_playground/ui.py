"""Serving the browser UI: the files `npm run build --workspace apps/playground/ui` writes to
apps/playground/ui/dist, with every other path answered by its index.html (the UI routes in
the browser). Until it is built, a page says how to build it.

The UI is sent with a Content-Security-Policy that runs only its own scripts: it shows what
logs, specs, models and tools hold as text, and were anything to slip into the page as markup,
the browser would not run it.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from psych_playground.deps import Ground

router = APIRouter(include_in_schema=False)

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

NOT_BUILT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Psych playground</title></head>
<body>
<h1>The playground's UI is not built yet</h1>
<p>Build it, then reload this page:</p>
<pre>npm install
npm run build --workspace apps/playground/ui</pre>
<p>The API is served all the same, under <a href="/api/health">/api</a>.</p>
</body></html>
"""


@router.get("/{path:path}")
async def ui(path: str, request: Request, ground: Ground) -> Response:
    """A file of the built UI, or its index.html for any other path (the UI's own routes)."""
    if path == "api" or path.startswith("api/"):
        raise HTTPException(404, f"no API route {request.url.path}")
    dist = ground.settings.ui_dist.resolve()
    index = dist / "index.html"
    headers = {"Content-Security-Policy": CONTENT_SECURITY_POLICY}
    if not index.is_file():
        return HTMLResponse(NOT_BUILT, headers=headers)
    wanted = (dist / path).resolve()
    if path and wanted.is_file() and wanted.is_relative_to(dist):
        return FileResponse(wanted, headers=headers)
    return FileResponse(index, headers={**headers, "Cache-Control": "no-cache"})
