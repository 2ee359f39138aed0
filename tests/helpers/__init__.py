"""Plain helpers shared by the test modules (the fixtures are in tests/conftest.py), one module per
thing they serve. Test modules import a name from the module that serves it
(``from helpers.paths import ROOT``), never from one another, nor from conftest.py
(tests/repository/test_test_modules.py checks it):

    paths             ROOT, running_in_ci, unavailable (skip on a laptop, fail under CI=true)
    text              has_hangul, text_outputs: the text of the chapters and their cells' outputs
    docs              the commands, paths and links a page names, and whether they are real
    torch_compare     how "equal to torch" is judged; the generated inputs and shapes of the library tests
    library_cases     inputs torch refuses (CASES, MODULE_CASES) and how a refusal is compared
    exercises         what the assignments give the students' code (init_batch_norm_state)
    platform_imports  grade files imported as Moodle and Canvas import them (grades-export's readers)
    explorer_oracle   torch.nn.functional in float64 as the explorer's oracle
    site_pages        the pages of the built site, in table-of-contents order
    browser           headless Chromium, fonts that draw Hangul, a page on a phone's screen
    axe               axe-core's audit of a page: skipped without axe-core, findings saved and judged
    page_visit        one load of each page of the built site (conftest.py's visit)
    lab_server        JupyterLab started for real, as make lab runs it
    perturbed         perturbed numerics for nbval's kernels (PerturbedKernels)
    background        slow set-up started early in a background thread (start_early, early)
    scheduling        make test's two workers: unit_of, UNITS_FIRST

This file holds no code (no re-exports).
"""
