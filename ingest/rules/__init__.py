"""The ingest's rule tables, pure and cheap to import (the compiler reads them): defects and the decision each
leads to (defects), how items become evidence and of which kind (evidence), media types (media_types), what
changed between two versions and how their statement covers it (versions) and ids."""
