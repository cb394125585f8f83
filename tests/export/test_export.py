"""ember.export.export against torch.export.export on the same modules and weights: the graph
signature's kinds and names, outputs equal to eager, state and RNG untouched, BatchNorm's
buffer mutation applied by .module(), pytree inputs/outputs, errors."""
import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
import ember.export as E


def _copy_weights(em, tm):
    sd = {k: torch.tensor(v.detach().numpy().copy()) for k, v in em.state_dict().items()}
    tm.load_state_dict(sd)


def _t(x):
    return torch.tensor(x.numpy().copy())


def _modules(nn):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)
            self.bn = nn.BatchNorm1d(3)

        def forward(self, x, d):
            return {"a": self.bn(self.lin(x)), "b": (d["y"] * 2, d["y"].sum())}
    return M


def test_signature_and_outputs_match_torch_eval():
    em, tm = _modules(enn)().eval(), _modules(torch.nn)().eval()
    _copy_weights(em, tm)
    x, y = ember.randn(2, 4), ember.randn(5)
    ep = E.export(em, (x, {"y": y}))
    tep = torch.export.export(tm, (_t(x), {"y": _t(y)}))
    es, ts = ep.graph_signature, tep.graph_signature
    assert [s.kind.name for s in es.input_specs] == [s.kind.name for s in ts.input_specs]
    assert [s.arg.name for s in es.input_specs] == [s.arg.name for s in ts.input_specs]
    assert [s.target for s in es.input_specs] == [s.target for s in ts.input_specs]
    assert es.parameters == ts.parameters and es.buffers == ts.buffers
    assert es.user_inputs == ts.user_inputs
    assert len(es.user_outputs) == len(ts.user_outputs)
    assert list(ep.state_dict) == list(tep.state_dict)
    out, ref = ep.module()(x, {"y": y}), tm(_t(x), {"y": _t(y)})
    np.testing.assert_allclose(out["a"].detach().numpy(), ref["a"].detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["b"][0].numpy(), ref["b"][0].numpy(), rtol=1e-6)
    assert isinstance(out["b"], tuple) and out["b"][1].shape == ()


def test_batchnorm_train_mutation_matches_torch():
    em, tm = _modules(enn)().train(), _modules(torch.nn)().train()
    _copy_weights(em, tm)
    x, y = ember.randn(6, 4), ember.randn(5)
    before = {k: v.clone() for k, v in em.state_dict().items()}
    versions = {k: v._version for k, v in em.state_dict().items()}
    ep = E.export(em, (x, {"y": y}))
    assert {k: v._version for k, v in em.state_dict().items()} == versions
    for k, v in em.state_dict().items():       # export left the model as it was
        assert bool((v == before[k]).all()), k
    assert set(ep.graph_signature.buffers_to_mutate.values()) == {
        "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}
    # torch records the same mutations once functionalized
    tsig = torch.export.export(tm, (_t(x), {"y": _t(y)})).run_decompositions().graph_signature
    assert set(tsig.buffers_to_mutate.values()) == set(
        ep.graph_signature.buffers_to_mutate.values())
    m = ep.module()
    for _ in range(2):
        out, ref = m(x, {"y": y}), tm(_t(x), {"y": _t(y)})
    np.testing.assert_allclose(out["a"].detach().numpy(), ref["a"].detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m.bn.running_var.numpy(), tm.bn.running_var.numpy(), rtol=1e-5)
    assert int(m.bn.num_batches_tracked) == int(tm.bn.num_batches_tracked) == 2


def test_state_and_rng_untouched_and_inputs_not_mutated():
    class Mut(enn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", ember.zeros(()))
            self.drop = enn.Dropout(0.5)

        def forward(self, x):
            self.count.add_(1)
            x.mul_(2)
            return self.drop(x)
    m = Mut().train()
    x = ember.ones(8)
    ember.manual_seed(3)
    state = ember.get_rng_state()
    ep = E.export(m, (x,))
    assert bool((ember.get_rng_state() == state).all())
    assert float(m.count) == 0 and bool((x == 1).all())
    sig = ep.graph_signature
    assert list(sig.buffers_to_mutate.values()) == ["count"]
    assert list(sig.user_inputs_to_mutate.values()) == ["x"]
    mm = ep.module()
    mm(x)
    assert float(mm.count) == 1 and bool((x == 2).all())


def test_call_directly_raises_like_torch():
    ep = E.export(enn.Linear(2, 2), (ember.randn(1, 2),))
    with pytest.raises(RuntimeError, match="exported_program.module()"):
        ep(ember.randn(1, 2))


def test_bad_args_type():
    with pytest.raises(ValueError, match="tuple"):
        E.export(enn.Linear(2, 2), ember.randn(1, 2))


def test_static_shape_and_structure_checks():
    tm = torch.nn.Linear(4, 3)
    em = enn.Linear(4, 3)
    ep = E.export(em, (ember.randn(2, 4),))
    tep = torch.export.export(tm, (torch.randn(2, 4),))
    for bad in ((3, 4), (2, 5)):
        with pytest.raises(AssertionError) as te:
            tep.module()(torch.randn(*bad))
        with pytest.raises(AssertionError) as ee:
            ep.module()(ember.randn(*bad))
        assert str(ee.value).replace("input", "x") == str(te.value).replace("input", "x")
    with pytest.raises(ValueError, match="tree spec"):
        ep.module()(ember.randn(2, 4), ember.randn(2, 4))


def test_printing_as_python():
    ep = E.export(enn.Sequential(enn.Linear(4, 3), enn.GELU()), (ember.randn(2, 4),))
    src = ep.graph_module.print_readable(print_output=False)
    assert src.startswith("class GraphModule(")
    tsrc = torch.export.export(torch.nn.Sequential(torch.nn.Linear(4, 3)), (
        torch.randn(2, 4),)).graph_module.print_readable(print_output=False)
    head = 'def forward(self, p_0_weight: "f32[3, 4]", p_0_bias: "f32[3]", input: "f32[2, 4]"'
    assert head in tsrc and head in src
    assert "ember.ops.linear(" in src and "ember.ops.gelu(" in src
    text = str(ep)
    assert "Graph signature:" in text and "PARAMETER target='0.weight'" in text
    assert "Range constraints: {}" in text


def test_run_decompositions_expands_composites():
    m = enn.Sequential(enn.Linear(4, 8), enn.LayerNorm(8), enn.GELU())
    x = ember.randn(3, 4)
    ep = E.export(m, (x,))
    ops = {n.opname for n in ep.graph.calls()}
    assert {"ember.ops.layer_norm", "ember.ops.gelu"} <= ops
    dec = ep.run_decompositions()
    dops = {n.opname for n in dec.graph.calls()}
    assert "ember.ops.layer_norm" not in dops and "ember.ops.gelu" not in dops
    assert all(n.op is None or n.op.kind != "composite" for n in dec.graph.calls())
    np.testing.assert_allclose(dec.module()(x).detach().numpy(), m(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert dec.graph_signature.parameters == ep.graph_signature.parameters


@pytest.mark.parametrize("code", ["sum", "item"])
def test_data_dependent_control_flow_names_the_line(code):
    class DD(enn.Module):
        def forward(self, x):
            if code == "sum":
                if x.sum() > 0:      # the line the error names
                    return x
                return -x
            return x * x.max().item()  # the line the error names

    class TDD(torch.nn.Module):
        def forward(self, x):
            if code == "sum":
                if x.sum() > 0:
                    return x
                return -x
            return x * x.max().item()
    if code == "sum":
        with pytest.raises(RuntimeError):   # torch: GuardOnDataDependentSymNode
            torch.export.export(TDD(), (torch.randn(3),))
    with pytest.raises(E.UserError, match=r"data-dependent.*test_export\.py:\d+") as ei:
        E.export(DD(), (ember.randn(3),))
    assert isinstance(ei.value, RuntimeError)


def test_shape_branch_is_resolved():
    class SB(enn.Module):
        def forward(self, x):
            if x.shape[0] > 2:
                return x * 2
            return x * 3
    ep = E.export(SB(), (ember.ones(4),))
    assert [n.args[1] for n in ep.graph.calls()] == [2]
    np.testing.assert_allclose(ep.module()(ember.ones(4)).numpy(), 2.0)


def test_tied_weights_and_gpt_matches_eager():
    from ember.examples.gpt import GPT
    ember.manual_seed(0)
    m = GPT(block_size=8, n_layer=1, n_head=2, n_embd=16).eval()
    idx = ember.randint(0, 256, (2, 8))
    ep = E.export(m, (idx,))
    assert "head.weight" not in ep.graph_signature.parameters
    mm = ep.module()
    assert mm.head.weight is mm.tok_emb.weight
    np.testing.assert_allclose(mm(idx)[0].detach().numpy(), m(idx)[0].detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert set(mm.state_dict()) == set(m.state_dict())


def test_module_gradients_flow_to_its_parameters():
    m = enn.Linear(3, 2)
    ep = E.export(m, (ember.randn(4, 3),))
    mm = ep.module()
    mm(ember.randn(4, 3)).sum().backward()
    assert mm.weight.grad is not None and mm.weight.grad.shape == (2, 3)


def test_namespace_extras_and_graph_module_call():
    m = enn.Sequential(enn.Linear(4, 4), enn.GELU())
    x = ember.randn(2, 4)
    ep = E.draft_export(m, (x,))
    dec = ep.run_decompositions(E.default_decompositions())
    assert "ember.ops.gelu" not in {n.opname for n in dec.graph.calls()}
    assert ep.run_decompositions({}) is ep
    um = E.unflatten(ep)
    np.testing.assert_allclose(um(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    lifted = [ep.state_dict[t] for _, t in ep.lifted]
    (out,) = ep.graph_module(*lifted, x)
    np.testing.assert_allclose(out.detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
