"""Prefixed catalogues in a selection run: the confused-pair table says whether a confusion crosses a
namespace, from the view confused_pair_categories."""

from __future__ import annotations

from tests.factories.rows import KnownRun, selection_row


def test_confused_pairs_say_whether_they_cross_a_category():
    rows = [selection_row(f"r{i}", "crm.get_customer", chosen="billing.get_invoice") for i in range(3)]
    rows += [selection_row(f"s{i}", "crm.get_customer", chosen="crm.update_customer") for i in range(2)]
    rows += [selection_row("t0", "crm.get_customer", chosen="none"), selection_row("u0", "crm.get_customer", True)]
    con = KnownRun().add(rows).finish()
    got = {(r[0], r[1]): r[2:] for r in con.execute(
        "SELECT expected, chosen, n, expected_category, chosen_category, crosses_category, within_category "
        "FROM confused_pair_categories").fetchall()}
    assert got[("crm.get_customer", "billing.get_invoice")] == (3, "crm", "billing", True, False)
    assert got[("crm.get_customer", "crm.update_customer")] == (2, "crm", "crm", False, True)
    assert got[("crm.get_customer", "none")] == (1, "crm", None, False, False)
