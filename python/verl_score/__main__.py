"""``python -m verl_score ARGS`` runs the verl-score binary with ARGS."""

from verl_score._binary import main

if __name__ == "__main__":
    main()
