"""The materials a text names (ingest/rules/materials.py): the mds2-2525 case and the words that must not count."""

from __future__ import annotations

from voe.ingest.rules.materials import conflict, materials

RECORD = ("The absolute laser absorption was measured simultaneously with X-ray imaging during laser melting of "
          "Ti-6Al-4V solid metal.")


def test_ti_6al_4v_holds_al_as_an_element_not_aluminium() -> None:
    assert materials(RECORD) == {"Ti-6Al-4V"}
    assert materials("Composition datasheet for NIST SRM 654b, a Ti-6Al-4V alloy") == {"Ti-6Al-4V"}
    assert materials("Results ... of a stationary laser spot on aluminum.") == {"aluminium"}
    assert materials("AA5182 sheet") == {"aluminium"} and materials("nickel alloy 718 plate") == {"nickel alloy 718"}
    assert materials("Al_Spot_TDA_Results.csv") == set()  # a file name's abbreviation is not a statement


def test_a_conflict_needs_both_to_name_a_material_and_none_shared() -> None:
    assert conflict("a stationary laser spot on aluminum", RECORD) == ({"aluminium"}, {"Ti-6Al-4V"})
    assert conflict("the Ti64 data sheet", RECORD) is None
    assert conflict("time-dependent width of the melt pool", RECORD) is None  # names none: nothing conflicts
    assert conflict("on aluminium", "melt pools of single tracks") is None  # the record names none
