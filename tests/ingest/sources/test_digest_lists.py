"""The lines of a digest list read as statements (ingest/sources/digest_lists.py)."""

from __future__ import annotations

from voe.ingest.sources.digest_lists import read_list

HEX = "ab" * 32


def test_tagged_lines_of_bsd_shasum_and_openssl_are_statements_of_their_path() -> None:
    data = (f"SHA256 (table.csv) = {HEX}\n"       # BSD sha256, shasum --tag, sha256sum --tag
            f"SHA2-256(sub/a b.csv)= {HEX}\n"     # openssl dgst -sha256
            f"SHA256 (odd (1).csv) = {HEX}\n"     # parentheses inside the name
            f"{HEX}  plain.csv\n").encode()
    assert [(x.line, x.alg, x.digest, x.path) for x in read_list("SHA256SUMS", data)] == [
        (1, "sha256", HEX, "table.csv"), (2, "sha256", HEX, "sub/a b.csv"), (3, "sha256", HEX, "odd (1).csv"),
        (4, "sha256", HEX, "plain.csv")]


def test_a_tag_that_names_another_algorithm_than_the_digest_is_no_statement() -> None:
    data = f"MD5 (x.csv) = {HEX}\nSHA512 (y.csv) = {HEX}\nSHA-256 (z.csv) = {HEX}\n".encode()
    assert [x.path for x in read_list("checksums.txt", data)] == ["z.csv"]
    # and a list whose name gives the algorithm keeps only lines of it
    md5 = f"MD5 (x.csv) = {'c' * 32}\nSHA256 (y.csv) = {HEX}\n".encode()
    assert [x.path for x in read_list("md5sums.txt", md5)] == ["x.csv"]
