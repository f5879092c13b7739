"""Calls to the calculators: unit_converter, medical_calculator and numpy_mcp."""

from __future__ import annotations

from datetime import date, timedelta

from .step import Step, tool


def unit_converter() -> list[Step]:
    p = "unit_converter__"
    return [
        tool(p + "convert_temperature", value=100, from_unit="celsius", to_unit="fahrenheit"),  # 212
        tool(p + "convert_temperature", value=98.6, from_unit="fahrenheit", to_unit="celsius"),  # 37
        tool(p + "convert_angle", value=180, from_unit="degrees", to_unit="radians"),  # pi
        tool(p + "convert_length", value=42.195, from_unit="kilometer", to_unit="mile"),  # a marathon, 26.2 mi
        tool(p + "convert_energy", value=1, from_unit="kilowatt hour", to_unit="megajoule"),  # 3.6
        tool(p + "convert_force", value=1, from_unit="kilonewtons", to_unit="pounds force"),  # 224.8
        tool(p + "convert_pressure", value=1, from_unit="atmosphere", to_unit="kilopascal"),  # 101.325
        tool(p + "convert_power", value=1, from_unit="horsepower", to_unit="watt"),  # 745.7
        tool(p + "convert_speed", value=100, from_unit="kilometers per hour", to_unit="miles per hour"),  # 62.1
        tool(p + "convert_area", value=1, from_unit="hectare", to_unit="acre"),  # 2.471
        tool(p + "convert_mass", value=11, from_unit="stone", to_unit="kilogram"),  # 69.9
        tool(p + "convert_volume", value=1, from_unit="gallon (US)", to_unit="liter"),  # 3.785
        tool(p + "convert_computer_data", value=4, from_unit="gigabytes", to_unit="megabytes"),
        tool(
            p + "convert_density", value=1, from_unit="grams per cubic centimeter", to_unit="kilograms per cubic meter"
        ),  # 1000
        tool(p + "convert_time", value=1, from_unit="fortnights", to_unit="days"),  # 14
        tool(
            p + "convert_batch",
            requests=[
                {
                    "value": 5,
                    "from_unit": "kilometer",
                    "to_unit": "mile",
                    "conversion_type": "length",
                    "request_id": "5k-run",
                },
                {
                    "value": 180,
                    "from_unit": "pound",
                    "to_unit": "kilogram",
                    "conversion_type": "mass",
                    "request_id": "body-weight",
                },
                {
                    "value": 350,
                    "from_unit": "fahrenheit",
                    "to_unit": "celsius",
                    "conversion_type": "temperature",
                    "request_id": "oven",
                },
            ],
        ),
        tool(p + "list_supported_units", unit_type="pressure"),
    ]


def medical_calculator(today: date) -> list[Step]:
    p = "medical_calculator__"
    lmp = (today - timedelta(weeks=12)).isoformat()  # a first-trimester patient whenever this is recorded
    return [
        tool(p + "egfr_epi", scr=1.1, age=58, male=True),
        tool(p + "egfr_epi_cr_cys", scr=1.1, scys=1.0, age=58, male=True),
        tool(p + "bp_children", years=8, months=4, height=128, sex="female", systolic=104, diastolic=66),
        tool(p + "bmi_bsa_calculator", weight=70, height=175),  # BMI 22.9, BSA 1.84
        tool(p + "crcl_cockcroft_gault", age=67, weight=82, height=69, scr=1.3, sex="male"),
        tool(p + "map_calculator", sbp=120, dbp=80),  # 93.3
        tool(
            p + "chads2_vasc_score",
            age=76,
            female=True,
            chf=False,
            hypertension=True,
            stroke_history=False,
            vascular_disease=False,
            diabetes=True,
        ),  # 5
        tool(
            p + "prevent_cvd_risk",
            age=55,
            female=False,
            tc=5.2,
            hdl=1.3,
            sbp=138,
            diabetes=False,
            current_smoker=True,
            egfr=88,
            using_antihtn=True,
            using_statins=False,
        ),
        tool(p + "corrected_calcium", serum_calcium=8.2, patient_albumin=2.8),  # 9.16
        tool(p + "qtc_calculator", qt_interval=400, heart_rate=88, formula="fridericia"),
        tool(p + "wells_pe_criteria", clinical_signs_dvt=True, heart_rate_over_100=True),  # 4.5
        tool(p + "ibw_abw_calculator", weight_kg=95, height_inches=70, male=True),
        tool(p + "pregnancy_calculator", calculation_method="lmp", date_value=lmp),
        tool(p + "revised_cardiac_risk_index", high_risk_surgery=True, ischemic_heart_disease=True),  # 2
        tool(
            p + "child_pugh_score", bilirubin=2.5, albumin=3.0, inr=1.8, ascites="slight", encephalopathy_grade=1
        ),  # 10
        tool(p + "steroid_conversion", from_steroid="prednisone", from_dose_mg=40, to_steroid="dexamethasone"),  # 6.0
        tool(p + "calculate_mme", opioid="oxycodone", dose_per_administration=10, doses_per_day=4),  # 60
        tool(p + "maintenance_fluids", weight_kg=25),  # 4-2-1 rule: 65 mL/h
        tool(p + "corrected_sodium", measured_sodium=130, serum_glucose=400),  # Katz 134.8, Hillier 137.2
        tool(
            p + "meld_3",
            age=52,
            female=False,
            bilirubin=3.2,
            inr=1.9,
            creatinine=1.6,
            albumin=2.9,
            sodium=131,
            dialysis=False,
        ),
        tool(
            p + "framingham_risk_score",
            age=61,
            total_cholesterol=230,
            hdl_cholesterol=42,
            systolic_bp=148,
            treated_for_bp=True,
            smoker=False,
            gender="male",
        ),
        tool(p + "homa_ir", fasting_insulin=12, fasting_glucose=105),  # 3.11
    ]


def numpy_mcp() -> list[Step]:
    # the `local` profile's early Scientific Computing (PyPI numpy-mcp; MCP-Bench's own build is scientific_computing)
    p = "numpy_mcp__"
    return [
        tool(p + "create_matrix", shape=[2, 2], values=[4, 7, 2, 6], name="A"),
        tool(p + "create_matrix", shape=[2, 2], values=[1, 2, 3, 4], name="B"),
        tool(p + "create_matrix", shape=[2, 2], values=[2, 1, 1, 2], name="S"),
        tool(p + "get_tensors"),
        tool(p + "view_tensor", name="A"),
        tool(p + "add_tensors", name_a="A", name_b="B"),  # [[5,9],[5,10]]
        tool(p + "subtract_tensors", name_a="A", name_b="B"),  # [[3,5],[-1,2]]
        tool(p + "scale_tensor", name="B", scale_factor=2.5, in_place=False),
        tool(p + "transpose", name="A"),
        tool(p + "determinant", name="A"),  # 10
        tool(p + "rank", name="A"),  # 2
        tool(p + "matrix_inverse", name="A"),  # [[0.6,-0.7],[-0.2,0.4]]
        tool(p + "eigen", name="S"),  # 3 and 1
        tool(p + "delete_tensor", name="B"),
        tool(p + "get_tensors"),
    ]
