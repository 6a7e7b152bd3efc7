"""Statistical `git bisect`: the commit that made a plan's workloads slower, each step a proven verdict.

git.py drives git (bisect in --no-checkout mode, a worktree per commit, everything undone at the end);
search.py builds, runs the plan on the good commit and the candidate interleaved, pools and judges."""
