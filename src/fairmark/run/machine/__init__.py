"""The machines a run's trials run on: the `Host` interface (remote/ implements it), `LocalHost`, a run's
`Hosts`, and boot variants (switching the next boot, verifying the one that came back)."""
