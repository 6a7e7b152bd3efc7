from fairmark.cli.main import entry

entry()
