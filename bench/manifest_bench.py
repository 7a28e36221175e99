"""Manifest load and review speed: prints figures, asserts nothing.

    .venv/bin/python bench/manifest_bench.py

Loads the demo manifest (11 tasks) from a directory and from a zip, with and
without the review gates, and a synthetic 200-task manifest, reporting
milliseconds per load. Sync is all-or-nothing, so a slow parse is a held
transaction's worth of latency for the admin upload.
"""

from __future__ import annotations

import io
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from leaderboard.manifest import load_manifest, read_manifest_zip

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo-release"


def per_call_ms(fn, repeat: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) * 1000 / repeat


def zipped(root: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


def synthetic(root: Path, count: int) -> None:
    template = DEMO / "tasks" / "a1_stairs_climb"
    lines = (DEMO / "release.yaml").read_text().split("tasks:\n")[0] + "tasks:\n"
    for index in range(count):
        slug = f"task_{index:04d}"
        shutil.copytree(template, root / "tasks" / slug)
        task_yaml = root / "tasks" / slug / "task.yaml"
        task_yaml.write_text(task_yaml.read_text().replace("slug: a1_stairs_climb", f"slug: {slug}"))
        lines += f"  - slug: {slug}\n    paper_value: {0.5 + index / 1000}\n    anchor_published: false\n"
    (root / "release.yaml").write_text(lines)


def main() -> None:
    data = zipped(DEMO)
    print(f"demo (11 tasks) directory, parse only:   {per_call_ms(lambda: load_manifest(DEMO), 50):7.2f} ms")
    print(
        "demo (11 tasks) directory, with review: "
        f"{per_call_ms(lambda: load_manifest(DEMO, known_simulators=[]), 50):7.2f} ms"
    )
    print(
        f"demo (11 tasks) zip, with review:       "
        f"{per_call_ms(lambda: load_manifest(read_manifest_zip(data), known_simulators=[]), 50):7.2f} ms"
    )
    print(f"demo canonical JSON + SHA-256:           {per_call_ms(lambda: load_manifest(DEMO).sha256, 50):7.2f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        synthetic(Path(tmp), 200)
        ms = per_call_ms(lambda: load_manifest(Path(tmp), known_simulators=[]), 5)
        print(f"synthetic 200 tasks, with review:        {ms:7.2f} ms ({ms / 200:.2f} ms per task)")


if __name__ == "__main__":
    main()
