from fairmark.cli._entry import entry

entry()
