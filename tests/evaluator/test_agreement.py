"""Agreement statistics against values computed by hand."""

import pytest

from mcpgw.evaluator.agreement import (
    all_raters_agreement,
    cohens_kappa,
    fleiss_kappa,
    judge_vs_humans,
    majority,
    percentage_agreement,
)

P, F = True, False


def test_percentage_agreement_skips_missing():
    assert percentage_agreement([P, P, F, None], [P, F, F, P]) == pytest.approx(2 / 3)
    assert percentage_agreement([None], [P]) is None
    with pytest.raises(ValueError):
        percentage_agreement([P], [P, F])


def test_cohens_kappa_by_hand():
    # 10 items: judge P,P,P,P,P,P,F,F,F,F ; human P,P,P,P,P,F,F,F,F,P
    judge = [P] * 6 + [F] * 4
    human = [P] * 5 + [F] * 4 + [P]
    # p_o = 8/10; judge P 6/10, human P 6/10 -> p_e = .36 + .16 = .52; kappa = (.8-.52)/(.48)
    assert cohens_kappa(judge, human) == pytest.approx((0.8 - 0.52) / 0.48)
    assert cohens_kappa([P, P], [P, P]) is None  # chance agreement 1: undefined
    assert cohens_kappa([P, F], [F, P]) == pytest.approx(-1.0)


def test_majority_and_ties():
    assert majority([P, P, F]) is P and majority([F, None, F]) is F
    assert majority([P, F]) is None and majority([None, None]) is None


def test_fleiss_kappa_by_hand():
    # 4 items x 3 raters. counts (P, F): (3,0) (2,1) (0,3) (1,2)
    items = [[P, P, P], [P, P, F], [F, F, F], [P, F, F]]
    # P_i: 1, 1/3, 1, 1/3 -> P_bar = 2/3; p_P = 6/12, p_F = 6/12 -> P_e = 0.5; kappa = (2/3 - .5)/.5 = 1/3
    assert fleiss_kappa(items) == pytest.approx(1 / 3)
    # Missing ratings: item 2 has only two raters; an item with one rating is left out.
    ragged = [[P, P, P], [P, F, None], [F, None, None]]
    # P_1 = 1, P_2 = 0 -> P_bar = .5; ratings P 4, F 1 -> P_e = .64 + .04 = .68; kappa = (.5-.68)/.32
    assert fleiss_kappa(ragged) == pytest.approx((0.5 - 0.68) / 0.32)
    assert fleiss_kappa([[P, P], [P, P]]) is None


def test_all_raters_agreement():
    assert all_raters_agreement([[P, P, P], [P, F, P], [F, F, None], [P, None, None]]) == pytest.approx(2 / 3)
    assert all_raters_agreement([[P]]) is None


def test_judge_vs_humans():
    humans = {"q1": [P, P, F], "q2": [F, F, F], "q3": [P, P, P], "q4": [P, F, None], "q5": [P, P, P]}
    judge = {"q1": P, "q2": P, "q3": P, "q4": F}
    result = judge_vs_humans(judge, humans)
    # majorities: q1 P, q2 F, q3 P, q4 tie -> None (left out of judge-vs-majority)
    assert result["items"] == 4 and result["items_without_judge"] == 1
    assert result["percentage_agreement"] == pytest.approx(2 / 3)
    assert result["all_raters_agreement"] == pytest.approx(2 / 4)
    assert result["all_raters_agreement_with_judge"] == pytest.approx(1 / 4)
