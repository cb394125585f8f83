"""Shared by the op-library tests: check that ember raises like torch does."""
import pytest


def same_error(fe, ft):
    """Both raise; ember's exception has torch's type family and the gist of its message."""
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(Exception) as ee:
        fe()
    t_exc, e_exc = te.value, ee.value
    for base in (IndexError, TypeError, ValueError, RuntimeError):
        if isinstance(t_exc, base):
            assert isinstance(e_exc, base), (type(e_exc), type(t_exc), str(e_exc))
            break
    gist = str(t_exc).split("\n")[0][:40].replace("torch.", "")
    assert gist in str(e_exc).replace("ember.", ""), (str(e_exc), str(t_exc))
