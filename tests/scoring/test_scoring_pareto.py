from scoring.pareto import pareto_frontier


def test_the_frontier_keeps_runs_no_other_beats_on_both_cost_and_score():
    points = [(1.0, 0.5), (2.0, 0.4), (3.0, 0.9), (0.5, 0.2), (3.0, 0.8), (10.0, 0.9)]
    assert pareto_frontier(points) == [3, 0, 2]


def test_a_cheaper_run_with_the_same_score_dominates_a_dearer_one():
    assert pareto_frontier([(2.0, 0.7), (1.0, 0.7)]) == [1]


def test_identical_points_are_both_on_the_frontier():
    assert pareto_frontier([(1.0, 0.7), (1.0, 0.7)]) == [0, 1]


def test_no_points_no_frontier():
    assert pareto_frontier([]) == []
