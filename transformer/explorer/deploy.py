"""Upload this repository to a Hugging Face Space (Gradio SDK) with `HfApi.upload_folder`.

    python -m transformer.deploy --space your-name/inside-a-transformer --dry-run   # list files, no network
    python -m transformer.deploy --space your-name/inside-a-transformer            # needs `hf auth login`

`upload_folder` stores binary files (model.safetensors, the screenshots) the way the Hub wants them,
so no git or Git LFS is needed. Run directories, virtualenvs, caches and test leftovers stay behind
(`IGNORE_PATTERNS`, on top of huggingface_hub's own `.git` / cache patterns). The README's front
matter is the Space's configuration (sdk, sdk_version, python_version, app_file).
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from huggingface_hub.utils import filter_repo_objects
from huggingface_hub.utils._paths import DEFAULT_IGNORE_PATTERNS

ROOT = Path(__file__).resolve().parents[2]  # the repository root

# Patterns use fnmatch on paths relative to the repository root, where "*" also matches "/".
IGNORE_PATTERNS = [
    "runs/*", ".venv/*", "venv/*", "env/*", "data/*", "multi30k-jsonl/*",  # training runs, environments, data
    "__pycache__/*", "*/__pycache__/*", "*.pyc", "*.pyo",
    ".pytest_cache/*", ".mypy_cache/*", ".ruff_cache/*", ".ipynb_checkpoints/*", "*/.ipynb_checkpoints/*",
    "*.egg-info/*", ".whl/*", ".gl/*", "build/*", "dist/*",
    ".ci/*", ".github/*", ".git*", "*.log", "*.tmp", "*.swp", ".DS_Store", "*/.DS_Store",
    "attention-*.npz", "*/attention-*.npz",  # the app's exports
]


def space_files(root: Path = ROOT, ignore_patterns: Sequence[str] = IGNORE_PATTERNS) -> list[tuple[str, int]]:
    """(path relative to root, size in bytes) of every file `upload_folder` would send, sorted.

    Applies the same filter as `upload_folder` (ours plus huggingface_hub's DEFAULT_IGNORE_PATTERNS);
    ignored directories are not walked (a virtualenv can hold 100k files).
    """
    patterns = list(ignore_patterns) + list(DEFAULT_IGNORE_PATTERNS)
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        rel_dir = Path(directory).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        # a directory is skipped when any file inside it would be ignored by a "dir/*"-style pattern
        dirs[:] = sorted(d for d in dirs if list(filter_repo_objects([f"{prefix}{d}/x"], ignore_patterns=patterns)))
        found += [prefix + f for f in files]
    kept = sorted(filter_repo_objects(found, ignore_patterns=patterns))
    return [(path, (root / path).stat().st_size) for path in kept]


def human(n_bytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n_bytes < 1024 or unit == "GB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    raise AssertionError("unreachable")


def deploy(space: str, *, root: Path = ROOT, private: bool = False, token: str | None = None,
           message: str = "Deploy the attention explorer") -> str:
    """Create the Space if needed (Gradio SDK) and upload the repository; returns the Space's URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    repo = api.create_repo(space, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
    api.upload_folder(repo_id=repo.repo_id, repo_type="space", folder_path=root, ignore_patterns=IGNORE_PATTERNS,
                      commit_message=message)
    return f"https://huggingface.co/spaces/{repo.repo_id}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", required=True, help="the Space's repo id, e.g. your-name/inside-a-transformer")
    parser.add_argument("--dry-run", action="store_true", help="list the files and their total size; no network")
    parser.add_argument("--private", action="store_true", help="create the Space as private")
    parser.add_argument("--token", default=None, help="a Hub token (default: the one saved by `hf auth login`)")
    parser.add_argument("--message", default="Deploy the attention explorer", help="the commit message")
    args = parser.parse_args(argv)
    if not args.space.strip() or args.space.count("/") > 1 or any(c.isspace() for c in args.space):
        parser.error(f"--space must look like 'owner/name' or 'name', got {args.space!r}")

    files = space_files()
    for path, size in files:
        print(f"{size:>12,d}  {path}")
    total = sum(size for _, size in files)
    print(f"{len(files)} files, {human(total)} in total -> space {args.space}")
    if args.dry_run:
        print("dry run: nothing uploaded")
        return 0
    print(f"uploaded: {deploy(args.space, private=args.private, token=args.token, message=args.message)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
