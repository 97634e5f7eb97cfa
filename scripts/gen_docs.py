"""Generate docs/ from the code, the skills, CHANGELOG.md and DESIGN.md.

    uv run python scripts/gen_docs.py            # write docs/
    uv run python scripts/gen_docs.py --check    # fail when docs/ differs from what is generated

See scripts/docgen/__init__.py for which page comes from where.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for scripts.docgen

from scripts.docgen import main

if __name__ == "__main__":
    sys.exit(main())
