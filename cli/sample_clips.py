"""`promem sample-clips OUT_DIR`: write the bundled three-day sample clip folder."""
from __future__ import annotations

import argparse
import sys


def register(sub) -> None:
    p = sub.add_parser(
        "sample-clips",
        help="write three scripted days of wearable clips (H.264 video, speech) plus their answer key",
        description="Render the bundled scenario (bench/sample_clips/scenario.yaml) as a clip folder "
        "(docs/formats.md section 1): one sub-folder per day, MP4 clips with JSON sidecars (location, "
        "narration; no transcript), speech in the video or in a .wav, profile.json, and expected.json "
        "naming the planted intentions, their opportunities and the near misses. Complete clips are "
        "skipped on a rerun.",
    )
    p.add_argument("out_dir", metavar="OUT_DIR", help="folder to write (created if missing)")
    p.add_argument("--seed", type=int, default=0, help="varies exact times, lengths, colours and layout, never the story (default 0)")
    p.add_argument("--force", action="store_true", help="rewrite every clip, and replace a folder written with another seed")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bench.sample_clips import SampleClipsError, write_sample_clips
    from bench.sample_clips.scenario import ScenarioError

    try:
        summary = write_sample_clips(args.out_dir, seed=args.seed, force=args.force, progress=not args.no_progress)
    except (SampleClipsError, ScenarioError) as exc:
        print(f"promem sample-clips: {exc}", file=sys.stderr)
        return 1
    print(summary.line())
    if summary.removed:
        print(f"removed {summary.removed} files of the earlier seed")
    if summary.failed:
        print(f"{len(summary.failed)} clips failed (rerun to retry them):", file=sys.stderr)
        for line in summary.failed:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"answer key: {summary.out_dir / 'expected.json'}")
    return 0
