"""The built-in models as ``zoo list`` shows them, written down so listing needs no Keras.

Generated from the live registry (`zoo.registry.model_table`) by ``python -m zoo.write_model_table``;
``tests/zoo/test_registry.py`` fails when the two differ (a model or option added, renamed or
given another default without regenerating this file), and `register_layers`, the import of
those families that registers them. Standard library only.
"""

from __future__ import annotations

# The modules that register the built-in models (each family registers at import).
FAMILIES = ("zoo.irnn", "zoo.fastrnn", "zoo.antisymmetric", "zoo.stable", "zoo.diagonal",
            "zoo.baselines", "zoo.gru", "zoo.dscnn")



def register_layers() -> None:
    """Import the registry and every family: registers the built-in models with the registry and
    their layers with Keras serialization (what ``keras.saving.load_model`` of a zoo model needs);
    cheap once done. ``import zoo`` does it as soon as Keras loads, except when a zoo module
    imported Keras first (``import zoo.qat`` before anything else), so a loader calls this rather
    than relying on the import order of the program it runs in. (A family already being imported
    is left to finish its import.)"""
    import importlib

    for module_name in ("zoo.registry", *FAMILIES):
        importlib.import_module(module_name)


# name -> {"description", "paper", "options"}; generated below this line.
MODELS: dict[str, dict[str, str]] = {'antisymmetric': {'description': 'AntisymmetricRNN: h += eps tanh((W - W^T - gamma I) h + V x)',
                   'options': "units=80, epsilon=0.1, gamma=0.01, activation='tanh', sigma_w=1, "
                              'state_clip=None, state_quant_bits=None, use_bias=True, dropout=0, '
                              'recurrent_dropout=0, seed=None',
                   'paper': 'Chang, Chen, Haber & Chi, AntisymmetricRNN: A Dynamical System View '
                            'on Recurrent Neural Networks, ICLR 2019'},
 'diagonal_rnn': {'description': 'DiagonalRNN: tanh RNN with diagonal recurrence, max-norm '
                                 'projected (Cayci & Eryilmaz, Eq. 2)',
                  'options': "units=80, alpha=0.5, rho_w=2, rho_u=None, activation='tanh', "
                             'use_bias=False, symmetric_init=True, seed=None, dropout=0, '
                             'recurrent_dropout=0',
                  'paper': 'Cayci & Eryilmaz, Convergence of gradient descent for RNNs: a '
                           'nonasymptotic analysis'},
 'dscnn': {'description': 'DS-CNN-S keyword-spotting CNN (MLPerf Tiny / Arm ML-zoo reference)',
           'options': 'units=64, blocks=4, first_kernel=(10, 4), first_strides=(2, 2), '
                      'dropout=0.2, final_dropout=0.4, weight_decay=0.0001, bn_momentum=0.99',
           'paper': 'Zhang et al. 2017 (Hello Edge) DS-CNN-S; MLPerf Tiny KWS reference'},
 'fastgrnn': {'description': 'FastGRNN: gated FastRNN sharing W, U between gate and update (Eq. 6)',
              'options': "units=80, gate_activation='sigmoid', update_activation='tanh', "
                         'zeta_init=1, nu_init=-4, w_rank=None, u_rank=None, use_bias=True, '
                         'qat=None, qat_weights=True, dropout=0, recurrent_dropout=0, seed=None',
              'paper': 'Kusupati et al., FastGRNN: A Fast, Accurate, Stable and Tiny Kilobyte '
                       'Sized Gated Recurrent Neural Network, NeurIPS 2018'},
 'fastrnn': {'description': 'FastRNN: residual tanh RNN, h = alpha h~ + beta h (Eq. 2)',
             'options': "units=80, activation='tanh', alpha_init=-3, beta_init=3, w_rank=None, "
                        'u_rank=None, use_bias=True, dropout=0, recurrent_dropout=0, seed=None',
             'paper': 'Kusupati et al., FastGRNN: A Fast, Accurate, Stable and Tiny Kilobyte Sized '
                      'Gated Recurrent Neural Network, NeurIPS 2018'},
 'gated_antisymmetric': {'description': 'Gated AntisymmetricRNN: the update scaled by a sigmoid '
                                        'gate',
                         'options': "units=80, epsilon=0.1, gamma=0.01, activation='tanh', "
                                    'sigma_w=1, state_clip=None, state_quant_bits=None, '
                                    'use_bias=True, dropout=0, recurrent_dropout=0, seed=None',
                         'paper': 'Chang, Chen, Haber & Chi, AntisymmetricRNN: A Dynamical System '
                                  'View on Recurrent Neural Networks, ICLR 2019'},
 'gru': {'description': "Keras GRU baseline (reset_after=True); qat='int8' trains its int8 step, "
                        "step_graph='lean' computes it in 13 TFLite ops instead of 17",
         'options': "units=80, qat=None, qat_weights=True, qat_bias=True, step_graph='keras', "
                    "qat_percentile=99.99, activation='tanh', recurrent_activation='sigmoid', "
                    'use_bias=True, dropout=0, recurrent_dropout=0, seed=None, reset_after=True, '
                    "use_cudnn='auto'",
         'paper': 'Keras built-in layer'},
 'irnn': {'description': 'iRNN: K Euler steps to the equilibrium per time step (Eq. 9 low-rank)',
          'options': 'units=80, k=1, alpha=1, trainable_alpha=False, eta_init=0.01, '
                     "eta_timesteps=None, g0='previous', state_sign=1, activation='relu', rank=16, "
                     "premultiply=True, use_bias=True, eta_parametrization='sigmoid', "
                     'state_clip=None, state_quant_bits=None, qat=None, qat_weights=True, '
                     'qat_bias=True, qat_percentile=99.99, dropout=0, recurrent_dropout=0, '
                     'seed=None',
          'paper': 'Kag, Zhang & Saligrama, RNNs incrementally evolving on an equilibrium '
                   'manifold, ICLR 2020'},
 'lstm': {'description': 'Keras LSTM baseline',
          'options': "units=80, activation='tanh', recurrent_activation='sigmoid', use_bias=True, "
                     'unit_forget_bias=True, dropout=0, recurrent_dropout=0, seed=None, '
                     "use_cudnn='auto'",
          'paper': 'Keras built-in layer'},
 'simple_rnn': {'description': 'Keras SimpleRNN (tanh) baseline',
                'options': "units=80, activation='tanh', use_bias=True, dropout=0, "
                           'recurrent_dropout=0, seed=None',
                'paper': 'Keras built-in layer'},
 'sirnn': {'description': 'SiRNN: the single-recursion iRNN (K = 1, Eq. 6)',
           'options': 'units=80, alpha=1, trainable_alpha=False, eta_init=0.01, '
                      "eta_timesteps=None, g0='previous', state_sign=1, activation='relu', "
                      "rank=16, premultiply=True, use_bias=True, eta_parametrization='sigmoid', "
                      'state_clip=None, state_quant_bits=None, qat=None, qat_weights=True, '
                      'qat_bias=True, qat_percentile=99.99, dropout=0, recurrent_dropout=0, '
                      'seed=None',
           'paper': 'Kag, Zhang & Saligrama, RNNs incrementally evolving on an equilibrium '
                    'manifold, ICLR 2020'},
 'stablernn': {'description': 'StableRNN: tanh RNN projected onto ||W||_2 <= lambda after every '
                              'step',
               'options': "units=80, max_norm=0.99, activation='tanh', use_bias=True, dropout=0, "
                          'recurrent_dropout=0, seed=None',
               'paper': 'Miller & Hardt, Stable Recurrent Models, ICLR 2019'}}
