"""The `corpus-dedup` console script: the same command line as the binary, run in this process."""
import sys

from corpus_dedup import _native


def main() -> None:
    sys.exit(_native.cli(["corpus-dedup", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
