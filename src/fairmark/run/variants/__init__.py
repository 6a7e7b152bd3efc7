"""What makes one variant differ from another: environment, command wrapper, replacement command (basic.py),
and changes to the system under test applied and reverted around a block of trials (system.py)."""
