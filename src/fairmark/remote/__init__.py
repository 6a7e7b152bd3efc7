"""Hosts other than the controller: the SSH connection and agent (`connection`, `agent`), trials executed
there (`executor`), and the probe's inputs captured there (`probe`)."""
