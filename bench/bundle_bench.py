"""Benchmark the pure bundle layer (no Django): where a verification's time goes.

Run: .venv/bin/python bench/bundle_bench.py [--repeat 100]

For the standard paper-gap bundle (11 tasks x 100 episodes, tar.zst, sealed
with age) it prints, per operation, operations per second in one process:
building the demo directory, sealing, open_bundle (decrypt + read + hash +
parse + schema), evaluate_paper_gap without bootstrap CIs, and with the
default 1000-resample CIs.  The ratio lines say what share of a full
verification each step is.  bench/verify_bench.py measures the whole worker.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from submissions.bundle import evaluate_paper_gap, open_bundle
from submissions.bundle.demo import demo_release_spec, seal_dir, write_paper_gap_bundle_dir
from submissions.bundle.envelope import generate_identity


def rate(label: str, repeat: int, action) -> float:
    action()  # warm-up
    start = time.perf_counter()
    for _ in range(repeat):
        action()
    elapsed = time.perf_counter() - start
    per_second = repeat / elapsed
    print(f"{label:<44} {per_second:9.1f} /s   {1000 * elapsed / repeat:8.2f} ms each")
    return elapsed / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=100)
    args = parser.parse_args()
    secret, public = generate_identity()
    spec, digest = demo_release_spec()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        counter = iter(range(10**6))
        build = rate(
            "write_paper_gap_bundle_dir (11 x 100)",
            max(args.repeat // 5, 5),
            lambda: write_paper_gap_bundle_dir(root / f"d{next(counter)}", seed=1),
        )
        directory = write_paper_gap_bundle_dir(root / "standard", seed=1)
        seal = rate("seal_dir (tar.zst + age)", args.repeat, lambda: seal_dir(directory, public, root / "s.age"))
        sealed = seal_dir(directory, public, root / "standard.age")
        print(f"standard bundle: {sealed.stat().st_size} bytes sealed")
        opened = rate("open_bundle", args.repeat, lambda: open_bundle(sealed, [secret]))
        bundle = open_bundle(sealed, [secret])

        def judge(resamples: int):
            return lambda: evaluate_paper_gap(
                bundle, release_spec=spec, required_task_set_hash=digest, signing_keys={}, bootstrap_resamples=resamples
            )

        plain = rate("evaluate_paper_gap (no CIs)", args.repeat, judge(0))
        with_ci = rate("evaluate_paper_gap (1000-resample CIs)", max(args.repeat // 10, 5), judge(1000))
    print(f"open + evaluate without CIs: {1 / (opened + plain):.1f} bundles/s")
    print(f"open + evaluate with CIs:    {1 / (opened + with_ci):.1f} bundles/s")
    print(f"ratio CI / (open + evaluate without CIs): {with_ci / (opened + plain):.2f}")
    print(f"(building a demo bundle: {1000 * build:.1f} ms; sealing: {1000 * seal:.1f} ms)")


if __name__ == "__main__":
    main()
