"""The binding rules every engine shares: what a class's MRO is, where an attribute
lookup (plain or through ``super()``) starts and stops. The scan's resolver and the
call-graph solver both ask these functions, so the two can never disagree about which
method a call runs (tests/test_binder.py holds them to it on real trees)."""
