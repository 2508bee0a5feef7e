"""What an archive folder is read as: a NERDm record (nerdm/: one builder, read whole or streamed), a plain folder
of files (folder), a facts catalog such as FACTS.md (catalog), and AM Bench release notes (releases)."""
