"""DS-CNN keyword-spotting backbone in plain Keras: the MLPerf Tiny / Arm ML-zoo reference.

Architecture (Zhang et al. 2017, "Hello Edge", DS-CNN-S; MLPerf Tiny ``kws_ref_model``
``keras_model.py`` ``ds_cnn``; Arm ML-zoo ``ds_cnn_small``)::

    Conv2D(64, (10, 4), strides 2, same) - BN - ReLU - Dropout(0.2)
    4 x [DepthwiseConv2D(3 x 3, same) - BN - ReLU - Conv2D(64, 1 x 1) - BN - ReLU]
    Dropout(0.4) - AveragePooling over the whole map - Flatten      (-> Dense head, added by
                                                                      zoo.create_model)

The references feed a 49 x 10 MFCC map; here the input is the zoo's (T, F) = 99 x 32 log mel
filterbank, read as a one-channel image. The first convolution's stride 2 gives a 50 x 16 map,
which the final pooling averages whole (the reference pools ``input_shape / 2``, i.e. its whole
25 x 5 map too). The parameter count is the reference's except the head (no layer depends on the
input size); compute grows with the map: about 6.4x the 49 x 10 reference.

The layer takes ``(batch, T, F)`` and returns ``(batch, filters)``, so it plugs into the model
registry like the recurrent layers (``units`` is the channel count).
"""

from __future__ import annotations

import keras

from zoo.registry import register_model


@keras.saving.register_keras_serializable(package="zoo")
class DSCNN(keras.layers.Layer):
    """Depthwise-separable CNN over a (time, feature) map; pooled channel vector out.

    Args:
        units: channels of every convolution (64 in DS-CNN-S).
        blocks: depthwise-separable blocks after the first convolution (4 in DS-CNN-S).
        first_kernel: kernel of the first convolution, (time, feature) (``(10, 4)``).
        first_strides: its strides (``(2, 2)``).
        dropout: dropout after the first convolution (0.2, as MLPerf Tiny).
        final_dropout: dropout before the pooling (0.4, as MLPerf Tiny).
        weight_decay: L2 factor on every convolution kernel (1e-4, as MLPerf Tiny).
        bn_momentum: momentum of the batch-norm moving statistics (0.99, Keras's default and the
            reference's). With few batches per epoch (16 on the ~1,600-clip google12_testset)
            0.99 leaves the moving statistics far from the data for many epochs, so validation
            sits at chance while training accuracy rises; 0.9 settles in ~20 steps.
        return_sequences: must be False (a registry argument; this backbone has no time axis
            out).
        **kwargs: `keras.layers.Layer` arguments (``name``, ``dtype``).

    Example:

    ```python
    import numpy as np
    import zoo

    layer = zoo.create_layer("dscnn", units=16, blocks=2)
    pooled = layer(np.zeros((4, 99, 32), "float32"))  # (4, 16)
    model = zoo.create_model("dscnn", input_shape=(99, 32), num_classes=12)  # logits (None, 12)
    ```
    """

    def __init__(self, units: int = 64, *, blocks: int = 4, first_kernel=(10, 4),
                 first_strides=(2, 2), dropout: float = 0.2, final_dropout: float = 0.4,
                 weight_decay: float = 1e-4, bn_momentum: float = 0.99,
                 return_sequences: bool = False, **kwargs):
        for key in ("return_state", "go_backwards", "stateful", "unroll"):
            if kwargs.pop(key, False):
                raise ValueError(f"DSCNN is not recurrent: option {key} is not supported")
        super().__init__(**kwargs)
        if return_sequences:
            raise ValueError("DSCNN returns one pooled vector per window: use head='last'")
        if int(units) < 1 or int(blocks) < 0:
            raise ValueError(f"units must be >= 1 and blocks >= 0, got {units} and {blocks}")
        self.units, self.blocks = int(units), int(blocks)
        self.first_kernel, self.first_strides = tuple(first_kernel), tuple(first_strides)
        self.dropout, self.final_dropout, self.weight_decay = dropout, final_dropout, weight_decay
        self.bn_momentum = float(bn_momentum)
        bn = lambda name: keras.layers.BatchNormalization(momentum=self.bn_momentum, name=name)
        reg = keras.regularizers.L2(weight_decay) if weight_decay else None
        self._stack = [keras.layers.Conv2D(self.units, self.first_kernel, self.first_strides,
                                           padding="same", kernel_regularizer=reg, name="conv0"),
                       bn("bn0"),
                       keras.layers.ReLU(name="relu0"), keras.layers.Dropout(dropout)]
        for i in range(1, self.blocks + 1):
            self._stack += [
                keras.layers.DepthwiseConv2D(3, padding="same", depthwise_regularizer=reg,
                                             name=f"dw{i}"),
                bn(f"bn_dw{i}"), keras.layers.ReLU(),
                keras.layers.Conv2D(self.units, 1, padding="same", kernel_regularizer=reg,
                                    name=f"pw{i}"),
                bn(f"bn_pw{i}"), keras.layers.ReLU()]
        self._stack += [keras.layers.Dropout(final_dropout),
                        keras.layers.GlobalAveragePooling2D(name="pool")]

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"DSCNN expects (batch, time, features), got {input_shape}")
        shape = (*input_shape, 1)
        for layer in self._stack:
            layer.build(shape)
            shape = layer.compute_output_shape(shape)
        self.built = True

    def call(self, inputs, training=None):
        x = keras.ops.expand_dims(inputs, -1)  # one-channel image: (batch, time, features, 1)
        for layer in self._stack:
            x = layer(x, training=training) if isinstance(
                layer, (keras.layers.Dropout, keras.layers.BatchNormalization)) else layer(x)
        return x

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.units)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "blocks": self.blocks,
                "first_kernel": list(self.first_kernel), "first_strides": list(self.first_strides),
                "dropout": self.dropout, "final_dropout": self.final_dropout,
                "weight_decay": self.weight_decay, "bn_momentum": self.bn_momentum}


register_model("dscnn", DSCNN, defaults={"units": 64},
               paper="Zhang et al. 2017 (Hello Edge) DS-CNN-S; MLPerf Tiny KWS reference",
               description="DS-CNN-S keyword-spotting CNN (MLPerf Tiny / Arm ML-zoo reference)")
