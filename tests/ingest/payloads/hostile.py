"""Generators of the hostile files of issue 44: each a few hundred bytes to a few MB that a parser left alone turns
into gigabytes or minutes. tests/ingest/payloads/test_hostile.py ingests them; bench/fuzz.py --long adds them."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

PAGE = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>")


def pdf(objs: list[bytes]) -> bytes:
    """A PDF of these objects (1 is the catalog) with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offs = []
    for i, o in enumerate(objs, 1):
        offs.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    x = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for o in offs:
        out += b"%010d 00000 n \n" % o
    out += b"trailer << /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, x)
    return bytes(out)

def stream(body: bytes, extra: bytes = b"") -> bytes:
    """A PDF stream object of `body`."""
    return b"<< /Length %d %s >>\nstream\n" % (len(body), extra) + body + b"\nendstream"

def cmap_bomb() -> bytes:
    """One page whose font's ToUnicode CMap maps one bfrange over the whole 24-bit code space (2^24 codes)."""
    cmap = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
            b"1 begincodespacerange <000000> <FFFFFF> endcodespacerange\n"
            b"1 beginbfrange <000000> <FFFFFF> <0000> endbfrange\n"
            b"endcmap CMapName currentdict /CMap defineresource pop end end")
    return pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                PAGE,
                stream(b"BT /F1 12 Tf 10 10 Td (AB) Tj ET"),
                b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
                stream(cmap)])

def widths_bomb() -> bytes:
    """One page whose CID font declares one width range of 2^31 CIDs."""
    return pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                PAGE,
                stream(b"BT /F1 12 Tf 10 10 Td <0001> Tj ET"),
                b"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /DescendantFonts [6 0 R] >>",
                b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /X "
                b"/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /W [0 2147483647 500] >>"])

OOXML = "http://schemas.openxmlformats.org"
MAIN = f"{OOXML}/spreadsheetml/2006/main"
OFFICE_REL = f"{OOXML}/officeDocument/2006/relationships"
PACKAGE_REL = f"{OOXML}/package/2006/relationships"
SML = "application/vnd.openxmlformats-officedocument.spreadsheetml"


def _rels(*targets: tuple[str, str]) -> str:
    items = "".join(f'<Relationship Id="rId{i}" Type="{OFFICE_REL}/{kind}" Target="{target}"/>'
                    for i, (kind, target) in enumerate(targets, 1))
    return f'<?xml version="1.0"?><Relationships xmlns="{PACKAGE_REL}">{items}</Relationships>'


def shared_strings_bomb(n: int = 44_700_000) -> bytes:
    """A 2 MB workbook of one cell and `n` shared strings (760 MB of XML inflated)."""
    types = (f'<?xml version="1.0"?><Types xmlns="{OOXML}/package/2006/content-types">'
             '<Default Extension="xml" ContentType="application/xml"/>'
             '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
             f'<Override PartName="/xl/workbook.xml" ContentType="{SML}.sheet.main+xml"/>'
             f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{SML}.worksheet+xml"/>'
             f'<Override PartName="/xl/sharedStrings.xml" ContentType="{SML}.sharedStrings+xml"/></Types>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", types)
        z.writestr("_rels/.rels", _rels(("officeDocument", "xl/workbook.xml")))
        z.writestr("xl/workbook.xml", f'<?xml version="1.0"?><workbook xmlns="{MAIN}" xmlns:r="{OFFICE_REL}">'
                                      '<sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>')
        z.writestr("xl/_rels/workbook.xml.rels", _rels(("worksheet", "worksheets/sheet1.xml"),
                                                       ("sharedStrings", "sharedStrings.xml")))
        z.writestr("xl/worksheets/sheet1.xml", f'<?xml version="1.0"?><worksheet xmlns="{MAIN}"><sheetData>'
                                               '<row r="1"><c r="A1" t="s"><v>0</v></c></row></sheetData></worksheet>')
        with z.open("xl/sharedStrings.xml", "w", force_zip64=True) as f:
            f.write(f'<?xml version="1.0"?><sst xmlns="{MAIN}">'.encode())
            chunk = b"<si><t>x</t></si>" * 100_000
            for _ in range(n // 100_000):
                f.write(chunk)
            f.write(b"</sst>")
    return buf.getvalue()


GENERATORS = {"cmap.pdf": cmap_bomb, "widths.pdf": widths_bomb, "strings.xlsx": shared_strings_bomb}


def write_all(folder: Path) -> list[Path]:
    """Each hostile file into `folder`, by the name its generator is known by."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, make in GENERATORS.items():
        (folder / name).write_bytes(make())
        written.append(folder / name)
    return written
