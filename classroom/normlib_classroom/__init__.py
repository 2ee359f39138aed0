"""Checkers for the classroom assignments: they tell a student what is wrong, in their language.

A test cell of an assignment (``classroom/course/source/``) calls one checker with the student's
function or class and ``LANG``::

    from normlib_classroom import check_layer_norm
    check_layer_norm(layer_norm, LANG)

The checker runs it on seeded random inputs, compares with ``torch.nn.functional`` /
``torch.nn`` and prints one line when everything agrees; otherwise it raises
:class:`CheckFailed` (an ``AssertionError``) with a message in Korean or English. Delegating does
not score: while the student's code runs, a call to a reference implementation of the task
(torch's normalization functions and modules, ``normlib``'s library, torch's autograd in the
backward task) fails it with a message that names the call (:mod:`._guard`).

=====================  ========================================================================
module                 serves
=====================  ========================================================================
``layernorm``          assignment 1: ``check_layer_norm_stats``, ``check_layer_norm``
``batchnorm``          assignment 2: ``check_batch_norm_train``, ``…_running``, ``…_eval``
``backward``           assignment 3: ``check_layer_norm_backward``, ``check_batch_norm_backward``
``axes_groupnorm``     assignment 4: ``check_axes``, ``check_channel_groups``, ``check_group_norm``
``fold``               assignment 5: ``check_scale_shift``, ``check_fold_batch_norm``, ``check_fold_training``
``fused``              chapter 12's graded exercise (imported from the module, not an assignment): ``check_grad_gamma_beta``
``_report``            all: :class:`CheckFailed`, the message, comparisons, the seeded inputs
``_slips``             all: recognising a known slip from what the student's code computed
``_guard``             all: catching a call to a reference implementation while the student's code runs
=====================  ========================================================================
"""

from ._report import CheckFailed
from .axes_groupnorm import AXES_INVALID, LAYOUTS, check_axes, check_channel_groups, check_group_norm
from .backward import check_batch_norm_backward, check_layer_norm_backward
from .batchnorm import check_batch_norm_eval, check_batch_norm_running, check_batch_norm_train
from .fold import check_fold_batch_norm, check_fold_training, check_scale_shift
from .layernorm import check_layer_norm, check_layer_norm_stats

__all__ = [
    "CheckFailed",
    "LAYOUTS",
    "AXES_INVALID",
    "check_layer_norm_stats",
    "check_layer_norm",
    "check_batch_norm_train",
    "check_batch_norm_running",
    "check_batch_norm_eval",
    "check_layer_norm_backward",
    "check_batch_norm_backward",
    "check_axes",
    "check_channel_groups",
    "check_group_norm",
    "check_scale_shift",
    "check_fold_batch_norm",
    "check_fold_training",
]
