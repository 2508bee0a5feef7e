"""What a measurement row's calibration cells state (ingest/rules/calibration.py), on the real cells of
`AM-Bench 2022 Measurements.xlsx` and on the template's own guidance."""

from __future__ import annotations

import pytest

from voe.ingest.rules.calibration import Statement, classify, is_template_sheet, states_calibration


@pytest.mark.parametrize(("column", "text", "expected"), [
    ("Calibration_measurement_identifier", "AMB2022_DIC_44519000", Statement.REFERENCE),
    ("Calibration_measurement_identier", "D0_calibration", Statement.REFERENCE),  # the sheet's own misspelling
    ("Calibration_data_description", "RR 25 beam profile and power meter measurements", Statement.NAMED),
    ("Calibration_data_description", "ACCS Force Calibration S/N: 105749", Statement.NAMED),
    ("Calibration_data_description", "calibrated 2021-02-03", Statement.CLAIM),
    ("Calibration_data_description", "calibrated 2019-11, rechecked 2022-02, +- 0.5N on 250N capacity load cell "
                                     "(Omega Engineering)", Statement.CLAIM),
    ("Calibration_data_description", "calibration of the extensometer was checked before testing using an Epsilon "
                                     "Model 3590VHR Displacement Calibrator calibrated 8/3/2020", Statement.CLAIM),
    ("Vic3D_DIC_calibration_file", "https://g-aa3b13.a09bbb.7eb0.dn.glob.us/AM-Bench/AMB2022/04/x.z3d",
     Statement.ELSEWHERE),
    ("Calibration_data", "NA", None), ("Calibration_data", "Link", None), ("Calibration_data_description", "text", None),
    ("Calibration_measurement_identifier", "Provide calibration measurement identifier or link to calibration data",
     None),
    ("Calibration_Y_or_N", "Y", None),  # a flag: whether the row is a calibration, not which one
    ("Calibration_type", "Force", None),  # what is calibrated, not which calibration
    ("DIC_grid_calibration_spacing", "4.0", None),
])
def test_a_calibration_cell_states_a_reference_a_name_a_claim_or_nothing(column: str, text: str,
                                                                          expected: Statement | None) -> None:
    assert classify(column, text) == expected


def test_template_sheets_and_columns() -> None:
    assert is_template_sheet("Template") and is_template_sheet("Example") and is_template_sheet("DOCUMENTATION")
    assert not is_template_sheet("Mechanical_testing") and is_template_sheet("Template Column Descriptions")
    assert states_calibration("Calibration_data_description") and not states_calibration("Calibration_type")
    assert not states_calibration("Measurement_identifier")
