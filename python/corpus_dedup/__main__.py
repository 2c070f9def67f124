"""`python -m corpus_dedup ...` is the `corpus-dedup` command."""
from corpus_dedup._cli import main

main()
