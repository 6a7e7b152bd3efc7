"""Starting one trial's process and measuring it: the C launcher and the launch server (`c/`), the placer (a
variant's cgroup or CPUs), the local executor (`execute_spec`). The launcher and the placer are standard
library only: the agent ships them to a host."""
