# Sourced by the campaign scripts beside it: the settings that must stay the same across
# campaigns for their comparisons to hold.
# Keras GRU / LSTM at the SiRNN recipe's budget (80 units, its optimizer settings, no recipe).
KERAS_BASELINE=(--recipe none --option units=80 --set lr=0.01 --set batch_size=128
                --set lr_decay_epochs=20 --set clipnorm=1.0)
# The QAT fine-tune's schedule (a variant with "init_from": "variant:<its float run>").
QAT_STAGE='"epochs": 10, "lr": 0.001, "lr_decay_epochs": null'
